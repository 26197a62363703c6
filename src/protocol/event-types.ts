/**
 * The event types (spec/PROTOCOL.md §4): the reference's five, which keep their
 * meaning, the three of input streams and credit (§4.7) and the three of resumable
 * calls (§4.9), which a peer that does not know them ignores (ENV-4).
 */
export const eventTypes = [
  'call.requested',
  'call.responded',
  'call.completed',
  'call.aborted',
  'call.error',
  'call.input',
  'call.end',
  'call.credit',
  'call.resumable',
  'call.resume',
  'call.resumed',
] as const;

export type EventType = (typeof eventTypes)[number];

export function isEventType(value: unknown): value is EventType {
  return typeof value === 'string' && (eventTypes as readonly string[]).includes(value);
}

/** Events only the callee (server) may send (§4). */
export const calleeEvents: ReadonlySet<EventType> = new Set([
  'call.responded',
  'call.completed',
  'call.error',
  'call.resumable',
  'call.resumed',
]);
