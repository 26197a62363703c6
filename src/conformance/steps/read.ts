import type { RawEvent } from '../events.js';
import type { RawPeer } from '../raw-peer.js';

export function isCredit(e: RawEvent): boolean {
  return e.kind === 'frame' && e.value !== null && typeof e.value === 'object' && (e.value as { type?: unknown }).type === 'call.credit';
}

/**
 * The next event that `belongs`. With `ignoreCredit` the `call.credit` frames before it
 * are consumed and passed over: the step does not care how the callee renews credit.
 */
export async function takeNext(c: RawPeer, belongs: (e: RawEvent) => boolean, timeoutMs: number, ignoreCredit: boolean): Promise<RawEvent | undefined> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const event = await c.events.take(belongs, Math.max(0, deadline - Date.now()));
    if (!ignoreCredit || event === undefined || !isCredit(event)) return event;
  }
}
