import type { SendCredit } from '../flow/index.js';
import { RpcError } from '../protocol/index.js';

/**
 * Sends a call's input stream (spec §4.7) as the callee grants credit: an item while
 * the credit is positive (CR-2), then the end. The source is pulled only when there
 * is credit, so a slow callee slows the source down (a file, a pipe, a terminal)
 * instead of growing a queue here. The credit is the call's: `sendItem` charges it
 * each item's encoded size, and a resumed call sets it to what its callee counts.
 */
export class InputPump {
  private started = false;
  private stopped = false;
  private iterator: AsyncIterator<unknown> | undefined;

  constructor(
    private readonly source: AsyncIterable<unknown>,
    private readonly credit: SendCredit,
    private readonly sendItem: (item: unknown) => void,
    private readonly sendEnd: () => void,
    private readonly fail: (error: RpcError) => void,
  ) {}

  /** The callee admitted the call (its first `call.credit`, CR-1, or a `call.resumed`): the source is read from now on. */
  start(): void {
    if (this.started || this.stopped) return;
    this.started = true;
    void this.run();
  }

  /** The call ended or was aborted: stop reading the source. */
  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.credit.stop();
    void this.iterator?.return?.()?.catch(() => undefined);
  }

  private async run(): Promise<void> {
    try {
      this.iterator = this.source[Symbol.asyncIterator]();
      for (;;) {
        if (!(await this.credit.untilCredit()) || this.stopped) return;
        const step = await this.iterator.next();
        if (this.stopped) return;
        if (step.done) break;
        this.sendItem(step.value);
      }
      this.sendEnd();
    } catch (error) {
      if (!this.stopped) this.fail(new RpcError('INTERNAL', `the input source failed: ${error instanceof Error ? error.message : String(error)}`));
    }
  }
}
