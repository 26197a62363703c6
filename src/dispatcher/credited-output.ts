import { SendCredit } from '../flow/index.js';
import type { RpcError } from '../protocol/index.js';
import type { CallEvent, CallOutlet, Sized } from './call-outlet.js';
import { cannotEncode, type CallOutput, type OutputOwner } from './call-output.js';
import type { OutboundAccount } from './identity-outbound.js';

interface Held {
  readonly frame: Sized;
  readonly final: boolean;
}

/**
 * A call's frames on their way to its outlet, under the flow rules (§4.8, §8): a
 * non-terminal output frame needs positive credit and is charged its size; a terminal
 * one needs none but waits behind the frames before it; every byte counts against the
 * call's buffer until the transport has taken it (BP-1), and against its identity's
 * output as well (§8, maxOutboundBytesPerIdentity).
 */
export class CreditedOutput implements CallOutput {
  /** Bytes handed to the outlet and not yet taken, plus those held for credit. */
  private pendingBytes = 0;
  /** Encoded frames waiting for credit, in order; counted in `pendingBytes`. */
  private readonly held: Held[] = [];
  /** Counts the outlets the call has had: bytes in flight on an old one no longer count. */
  private epoch = 0;
  /** Undefined: the caller asked for no credit. */
  private sendCredit: SendCredit | undefined;
  inputCredit: (() => number) | undefined;

  constructor(
    private outlet: CallOutlet,
    credit: number | undefined,
    readonly maxBufferedBytes: number,
    private readonly owner: OutputOwner,
    /** Told when a send fails: the connection the frame went to is gone. */
    private lose: (error: unknown) => void,
    /** The call's identity's output, over all its connections. */
    private readonly account: OutboundAccount,
  ) {
    this.sendCredit = credit === undefined ? undefined : new SendCredit(credit);
  }

  get takesCredit(): boolean {
    return this.sendCredit !== undefined;
  }

  get full(): boolean {
    return this.pendingBytes >= this.maxBufferedBytes;
  }

  get overflowing(): boolean {
    return this.full;
  }

  get drained(): boolean {
    return this.held.length === 0;
  }

  /** A non-terminal frame may go now (CR-2). */
  get hasCredit(): boolean {
    return this.sendCredit?.hasCredit ?? true;
  }

  encode(output: unknown, final: boolean, seq?: number): Sized | RpcError {
    try {
      return this.outlet.encode(seq === undefined ? { type: 'output', output, final } : { type: 'output', output, final, seq });
    } catch (error) {
      // e.g. a BigInt under the JSON codec, or a frame over maxFrameBytes: the call fails, the connection lives.
      return cannotEncode(error);
    }
  }

  /** A terminal event's frame; one that cannot be encoded becomes a plain INTERNAL error, which always can. */
  encodeTerminal(event: CallEvent): Sized {
    try {
      return this.outlet.encode(event);
    } catch (error) {
      return this.outlet.encode({ type: 'error', error: cannotEncode(error) });
    }
  }

  item(_output: unknown, frame: Sized): void {
    this.queue(frame, false);
  }

  answer(frame: Sized): void {
    this.queue(frame, true);
  }

  finish(event: CallEvent): void {
    this.queue(this.encodeTerminal(event), true);
  }

  control(event: CallEvent): void {
    let frame: Sized;
    try {
      frame = this.outlet.encode(event);
    } catch (error) {
      return this.owner.failed(cannotEncode(error));
    }
    this.send(frame, false);
  }

  grant(bytes: number): void {
    this.control({ type: 'credit', bytes });
  }

  credit(bytes: number): boolean {
    if (!this.sendCredit) return false;
    this.sendCredit.grant(bytes);
    this.flush();
    return true;
  }

  input(): 'take' {
    return 'take';
  }

  listenForRoom(): void {}

  ended(): void {}

  discard(): void {
    this.dropHeld();
  }

  /** What waits for credit is never sent (ABT-2). */
  dropHeld(): void {
    for (const held of this.held.splice(0)) this.countForCredit(-held.frame.byteLength);
  }

  /** Adds `bytes` of credit without sending what waits (a wrapper sends in its own order). */
  addCredit(bytes: number): void {
    this.sendCredit?.grant(bytes);
  }

  /** Sends a frame now, charged to the credit when it is not terminal: for a wrapper that keeps its own order. */
  sendCharged(frame: Sized, final: boolean): void {
    if (!final) this.sendCredit?.charge(frame.byteLength);
    this.send(frame, final);
  }

  /** The call goes on another outlet, with a fresh output window: bytes in flight on the old one no longer count. */
  moveTo(outlet: CallOutlet, credit: number, lose: (error: unknown) => void): void {
    this.epoch++;
    // What waits for credit stays counted; what went to the old outlet no longer does.
    let waiting = 0;
    for (const held of this.held) waiting += held.frame.byteLength;
    this.countSent(-(this.pendingBytes - waiting));
    this.outlet = outlet;
    this.lose = lose;
    this.sendCredit = new SendCredit(credit);
  }

  private queue(frame: Sized, final: boolean): void {
    if (this.held.length === 0 && (final || this.hasCredit)) {
      // The common case, kept off the queue: nothing waits, and there is credit (or no need of it).
      this.sendCharged(frame, final);
    } else {
      this.held.push({ frame, final });
      this.countForCredit(frame.byteLength);
      this.flush();
    }
  }

  private flush(): void {
    while (this.held.length > 0) {
      const head = this.held[0]!;
      if (!head.final && !this.hasCredit) break;
      this.held.shift();
      this.countForCredit(-head.frame.byteLength);
      this.sendCharged(head.frame, head.final);
    }
    this.owner.flushed();
  }

  /** Hands one frame to the outlet, counting its bytes against the call until taken (BP-1). */
  private send(frame: Sized, final: boolean): void {
    const size = frame.byteLength;
    this.countSent(size);
    // A send that fails tells the connection it was on, which may no longer be the call's (§4.9).
    const lose = this.lose;
    const epoch = this.epoch;
    this.outlet.send(frame, final).then(
      () => this.released(size, epoch),
      (error: unknown) => {
        this.released(size, epoch);
        lose(error);
      },
    );
  }

  private released(bytes: number, epoch: number): void {
    if (epoch !== this.epoch) return;
    this.countSent(-bytes);
    this.owner.released();
  }

  private countSent(bytes: number): void {
    this.pendingBytes += bytes;
    this.account.addSent(bytes);
  }

  private countForCredit(bytes: number): void {
    this.pendingBytes += bytes;
    this.account.addForCredit(bytes);
  }
}
