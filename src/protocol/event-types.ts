/** The five event types, and only five (spec/PROTOCOL.md §4). */
export const eventTypes = [
  'call.requested',
  'call.responded',
  'call.completed',
  'call.aborted',
  'call.error',
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
]);
