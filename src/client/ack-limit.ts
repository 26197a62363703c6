/**
 * How far a caller that relays a resumable stream may acknowledge its output (spec/PROTOCOL.md
 * §4.9): no further than its own caller has. A gateway that acknowledged to the agent what it
 * had merely received would let the agent forget items its caller may still need, from
 * another gateway, after this one is gone.
 */
export class AckLimit {
  private value: number;
  private listener: (() => void) | undefined;
  private releasers: (() => void)[] | undefined = [];

  constructor(initial = 0) {
    this.value = initial;
  }

  /** The last output sequence number that may be acknowledged. */
  get upTo(): number {
    return this.value;
  }

  /** The relayed caller has received up to `seq`. */
  raise(seq: number): void {
    if (seq <= this.value) return;
    this.value = seq;
    this.listener?.();
  }

  /** Set by the connection that tracks the call: it acknowledges more once the limit rises. */
  onRaise(listener: () => void): void {
    this.listener = listener;
  }

  /** The relayed caller has the whole stream, or gave it up: the server may forget the call. */
  release(): void {
    const releasers = this.releasers;
    this.releasers = undefined;
    for (const release of releasers ?? []) release();
  }

  /** Runs `fn` once the stream is released (at once if it is). */
  onRelease(fn: () => void): void {
    if (this.releasers) this.releasers.push(fn);
    else fn();
  }
}
