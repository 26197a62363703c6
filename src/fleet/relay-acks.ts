import type { AcknowledgementPolicy } from '../client/index.js';

/**
 * How a gateway acknowledges a stream it relays from an agent (spec/PROTOCOL.md §4.9,
 * docs/fleet.md): no further than its own caller has. A gateway that acknowledged to the
 * agent what it had merely received would let the agent forget items its caller may still
 * need, from another gateway, after this one is gone; and the agent may forget the ended
 * call only once the caller has the whole stream, or gave it up.
 */
export class RelayAcks implements AcknowledgementPolicy {
  private upTo: number;
  private acknowledge: () => void = () => undefined;
  private forgets: (() => void)[] | undefined = [];

  constructor(initial = 0) {
    this.upTo = initial;
  }

  limit(received: number): number {
    return Math.min(received, this.upTo);
  }

  watch(acknowledge: () => void): void {
    this.acknowledge = acknowledge;
  }

  ended(forget: () => void): void {
    if (this.forgets) this.forgets.push(forget);
    else forget();
  }

  /** The relayed caller has received up to `seq`. */
  raise(seq: number): void {
    if (seq <= this.upTo) return;
    this.upTo = seq;
    this.acknowledge();
  }

  /** The relayed caller has the whole stream, or gave it up: the agent may forget the call. */
  release(): void {
    const forgets = this.forgets;
    this.forgets = undefined;
    for (const forget of forgets ?? []) forget();
  }
}
