/**
 * A call's input stream on the callee (spec/PROTOCOL.md §4.7): items the caller
 * sent, in order, for the handler to pull. The caller may send only what it was
 * granted; the callee grants `window` bytes at admission and grants again as the
 * handler consumes, not as frames arrive, so a slow handler holds at most about
 * one window (plus one frame) of input.
 */
export class InputStream implements AsyncIterable<unknown> {
  private readonly items: { value: unknown; bytes: number }[] = [];
  private credit: number;
  private consumed = 0;
  private ended = false;
  private closed = false;
  private wake: (() => void) | undefined;

  constructor(
    private readonly window: number,
    private readonly grant: (bytes: number) => void,
  ) {
    this.credit = window;
  }

  /** CR-2: a frame may be sent while the sender's credit is positive; it is then charged in full. */
  get hasCredit(): boolean {
    return this.credit > 0;
  }

  /** The caller's credit as the callee counts it: what a resumed caller starts from again (§4.9). */
  get callerCredit(): number {
    return this.credit;
  }

  get isEnded(): boolean {
    return this.ended;
  }

  push(value: unknown, bytes: number): void {
    this.credit -= bytes;
    this.items.push({ value, bytes });
    this.notify();
  }

  /** The caller's `call.end`: the handler's loop finishes once it has taken every item. */
  end(): void {
    this.ended = true;
    this.notify();
  }

  /** The call ended: the handler's loop finishes now. */
  close(): void {
    this.closed = true;
    this.items.length = 0;
    this.notify();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<unknown> {
    for (;;) {
      if (this.closed) return;
      const next = this.items.shift();
      if (next) {
        this.consumed += next.bytes;
        // Renew as the application consumes (CR-3), in steps of half a window.
        if (this.consumed >= this.window / 2) {
          this.credit += this.consumed;
          this.grant(this.consumed);
          this.consumed = 0;
        }
        yield next.value;
        continue;
      }
      if (this.ended) return;
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }
}
