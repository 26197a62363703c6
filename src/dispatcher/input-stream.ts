import { AsyncQueue, ReceiveWindow } from '../flow/index.js';

/**
 * A call's input stream on the callee (spec/PROTOCOL.md §4.7): items the caller
 * sent, in order, for the handler to pull. The caller may send only what it was
 * granted; the callee grants `window` bytes at admission and grants again as the
 * handler consumes, not as frames arrive, in steps of half a window (CR-3), so a
 * slow handler holds at most about one window (plus one frame) of input.
 */
export class InputStream implements AsyncIterable<unknown> {
  private readonly items = new AsyncQueue<{ value: unknown; bytes: number }>();
  private readonly window: ReceiveWindow;

  constructor(window: number, grant: (bytes: number) => void) {
    this.window = new ReceiveWindow(window, window / 2, grant);
  }

  /** CR-2: a frame may be sent while the sender's credit is positive; it is then charged in full. */
  get hasCredit(): boolean {
    return this.window.hasCredit;
  }

  /** The caller's credit as the callee counts it: what a resumed caller starts from again (§4.9). */
  get callerCredit(): number {
    return this.window.credit;
  }

  get isEnded(): boolean {
    return this.items.isEnded;
  }

  push(value: unknown, bytes: number): void {
    this.window.arrived(bytes);
    this.items.push({ value, bytes });
  }

  /** The caller's `call.end`: the handler's loop finishes once it has taken every item. */
  end(): void {
    this.items.end();
  }

  /** The call ended: the handler's loop finishes now. */
  close(): void {
    this.items.close();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<unknown> {
    for (;;) {
      const next = await this.items.next();
      if (next.done) return;
      this.window.take(next.value.bytes);
      yield next.value.value;
    }
  }
}
