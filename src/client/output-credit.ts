import { RpcError } from '../protocol/index.js';

/**
 * What a callee may still send on a stream as this caller counts it (spec §4.8, CR-7):
 * the window asked for, less what arrived, plus what was granted back. A callee sends
 * while the credit is positive, so it may overshoot by one frame; `slackBytes` more
 * covers a peer that sizes frames a little differently. A frame that arrives past that
 * is a peer ignoring credit: the call ends, rather than the consumer's queue growing
 * without bound while nobody reads it.
 */
export class OutputCredit {
  /** The tolerance past the credit, beyond the one frame CR-5 allows. */
  static readonly SLACK_BYTES = 64 * 1024;
  private credit: number;

  constructor(private readonly window: number) {
    this.credit = window;
  }

  /** A frame of `bytes` arrived: undefined while within credit, else the error that ends the call. */
  charge(bytes: number): RpcError | undefined {
    if (this.credit <= -OutputCredit.SLACK_BYTES) {
      return RpcError.of('CREDIT_EXCEEDED', `the server sent more output than the ${this.window}-byte window it was granted (spec §4.8, CR-7)`);
    }
    this.credit -= bytes;
    return undefined;
  }

  /** The caller granted `bytes` more. */
  granted(bytes: number): void {
    this.credit += bytes;
  }

  /** A resume asked for a whole window afresh (§4.9): grants made before it count no more. */
  renewed(): void {
    this.credit = this.window;
  }
}
