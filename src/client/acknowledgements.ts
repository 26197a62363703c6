/**
 * When a resumable call tells the callee which output items arrived (spec/PROTOCOL.md §4.9),
 * and when the callee may forget the ended call. The callee keeps every item until it is
 * acknowledged, so what a call acknowledges is what it can no longer ask for again.
 */
export interface AcknowledgementPolicy {
  /** The last output sequence number the call may acknowledge, having received up to `received`. */
  limit(received: number): number;
  /** Called once, as the call starts: `acknowledge` sends what `limit` allows now (the policy calls it when its limit rose). None: the limit only rises with what arrives. */
  watch?(acknowledge: () => void): void;
  /** The stream ended: `forget` tells the callee it may forget the call rather than keep it for its grace. */
  ended(forget: () => void): void;
}

/**
 * The default: everything received is acknowledged (once per burst of arrivals, by the
 * call), and the callee may forget the call as soon as it ended.
 */
export const acknowledgeOnArrival: AcknowledgementPolicy = {
  limit: (received) => received,
  ended: (forget) => forget(),
};
