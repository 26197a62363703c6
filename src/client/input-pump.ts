import { RpcError } from '../protocol/index.js';

/**
 * Sends a call's input stream (spec §4.7) as the callee grants credit: an item
 * while the credit is positive, each charged its encoded size (CR-2), then the end.
 * The source is pulled only when there is credit, so a slow callee slows the
 * source down (a file, a pipe, a terminal) instead of growing a queue here.
 */
export class InputPump {
  private credit = 0;
  private started = false;
  private stopped = false;
  private wake: (() => void) | undefined;
  private iterator: AsyncIterator<unknown> | undefined;

  constructor(
    private readonly source: AsyncIterable<unknown>,
    private readonly sendItem: (item: unknown) => number,
    private readonly sendEnd: () => void,
    private readonly fail: (error: RpcError) => void,
  ) {}

  /** A `call.credit` from the callee; the first one also says the call was admitted (CR-1). */
  grant(bytes: number): void {
    this.credit += bytes;
    if (!this.started) {
      this.started = true;
      void this.run();
    }
    this.notify();
  }

  /** The call ended or was aborted: stop reading the source. */
  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.notify();
    void this.iterator?.return?.()?.catch(() => undefined);
  }

  private async run(): Promise<void> {
    try {
      this.iterator = this.source[Symbol.asyncIterator]();
      for (;;) {
        while (this.credit <= 0 && !this.stopped) await new Promise<void>((resolve) => (this.wake = resolve));
        if (this.stopped) return;
        const step = await this.iterator.next();
        if (this.stopped) return;
        if (step.done) break;
        this.credit -= this.sendItem(step.value);
      }
      this.sendEnd();
    } catch (error) {
      if (!this.stopped) this.fail(new RpcError('INTERNAL', `the input source failed: ${error instanceof Error ? error.message : String(error)}`));
    }
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }
}
