import { RpcError } from '../protocol/index.js';
import type { CallEvent, Sized } from './call-outlet.js';
import { cannotEncode, type CallOutput, type OutputOwner } from './call-output.js';
import type { CreditedOutput } from './credited-output.js';
import type { ReplayLog } from './replay-log.js';
import { resumedElsewhere } from './wire-error.js';

/**
 * A resumable call's output (spec/PROTOCOL.md §4.9), wrapped around its credited one:
 * items numbered and kept in a replay log until the caller acknowledges them, sent in
 * order while the call has a connection and credit, then its terminal event; its input
 * numbered too. The call may lose its connection (`detach`) and be taken up on another
 * (`reattach`), which hears what it lacks again.
 */
export class ResumableOutput implements CallOutput {
  /** The terminal event, sent once every kept item has gone. */
  private terminalEvent: CallEvent | undefined;
  private terminalSent = false;
  private attached = true;
  /** The last input sequence number received. */
  private inputSeq = 0;
  /**
   * The last input a server this one relays the call to has (a fleet agent, through a seam):
   * the caller is told it was received no further, as what is only here dies with this
   * server, and the caller must be able to send it again to another. None: no such server.
   */
  private upstreamInputSeq: number | undefined;
  private acknowledged: ((seq: number) => void) | undefined;
  private forgotten: (() => void) | undefined;

  constructor(
    private readonly inner: CreditedOutput,
    readonly log: ReplayLog,
    private readonly owner: OutputOwner,
    /** Lets the call's record go: its caller wants nothing more of it. */
    private readonly release: () => void,
  ) {}

  get takesCredit(): boolean {
    return this.inner.takesCredit;
  }

  get full(): boolean {
    return this.inner.full;
  }

  get overflowing(): boolean {
    return this.inner.full || this.log.full;
  }

  get drained(): boolean {
    return this.terminalSent;
  }

  /** On a connection; false while the call waits for its caller. */
  get isAttached(): boolean {
    return this.attached;
  }

  get inputCredit(): (() => number) | undefined {
    return this.inner.inputCredit;
  }

  set inputCredit(credit: (() => number) | undefined) {
    this.inner.inputCredit = credit;
  }

  encode(output: unknown, final: boolean): Sized | RpcError {
    return this.inner.encode(output, final, this.log.nextSeq);
  }

  item(output: unknown, frame: Sized): void {
    this.log.append(output, frame, this.attached);
    this.flush();
  }

  answer(frame: Sized): void {
    this.inner.answer(frame);
  }

  finish(event: CallEvent): void {
    this.terminalEvent = event;
    this.flush();
  }

  /** Lost with a lost connection: a resume restates what matters. */
  control(event: CallEvent): void {
    if (this.attached) this.inner.control(event);
  }

  grant(bytes: number): void {
    this.control({ type: 'credit', bytes, seq: this.inputAcknowledged });
  }

  /** The last input its caller may forget. */
  private get inputAcknowledged(): number {
    return Math.min(this.inputSeq, this.upstreamInputSeq ?? this.inputSeq);
  }

  /** The server this call is relayed to has its input up to `seq`: the caller hears of no more than that (§4.9). */
  upstreamHasInput(seq: number): void {
    this.upstreamInputSeq = Math.max(this.upstreamInputSeq ?? 0, seq);
  }

  credit(bytes: number, seq?: number): boolean {
    this.inner.addCredit(bytes);
    if (seq !== undefined) {
      this.log.ack(seq);
      this.acknowledged?.(seq);
    }
    this.flush();
    this.owner.released();
    return true;
  }

  /** What the callee already has is sent again after a resume and dropped here; a gap is a broken caller. */
  input(seq: number | undefined): 'take' | 'drop' | RpcError {
    if (seq === undefined || seq > this.inputSeq + 1) {
      return RpcError.of('INVALID_FRAME', `a resumable call's input must be numbered in order: expected seq ${this.inputSeq + 1}`);
    }
    if (seq <= this.inputSeq) return 'drop';
    this.inputSeq = seq;
    return 'take';
  }

  listenForRoom(): void {
    if (this.log.full && !this.log.overOwnBound) this.log.waitForBudget(this.owner);
  }

  ended(): void {
    this.log.stopWaiting(this.owner);
  }

  discard(): void {
    this.release();
    this.forget();
    this.inner.discard();
  }

  /** Hears each acknowledgement of the caller's: the last item it has received. */
  onAcknowledged(listener: (seq: number) => void): void {
    this.acknowledged = listener;
  }

  /** Hears once that nothing of the call is kept any more. */
  onForgotten(listener: () => void): void {
    this.forgotten = listener;
  }

  /** Whether a caller that has received up to output `seq` can be given everything after it. */
  replaysAfter(seq: number): boolean {
    return this.log.keepsAfter(seq);
  }

  /** Nothing of the call is kept any more (its record is gone): its replay's bytes go back. */
  forget(): void {
    this.log.clear();
    this.terminalSent = true;
    const forgotten = this.forgotten;
    this.forgotten = undefined;
    forgotten?.();
  }

  /** The connection is lost: the call runs on, its output kept, until it is resumed. */
  detach(): void {
    this.attached = false;
    this.log.forgetFrames();
  }

  /**
   * A new connection takes the call up after output `seq` (`move` puts the call on it):
   * it hears what input the callee has, then every item after `seq`, then the terminal
   * event if the call has ended.
   */
  reattach(seq: number, move: () => void): void {
    // RSM-10: a connection the call is taken from while it still holds it (one that has not noticed it
    // is lost, or another caller's) hears a clear end, unless it already had the call's terminal event.
    if (this.attached && !this.terminalSent) this.inner.sendCharged(this.inner.encodeTerminal({ type: 'error', error: resumedElsewhere() }), true);
    move();
    this.attached = true;
    this.terminalSent = false;
    this.log.rewind(seq);
    this.resumed(this.inputSeq);
  }

  /** The call is held again with input up to `inputSeq` (taken up from elsewhere, or re-attached): its caller hears `call.resumed`. */
  resumed(inputSeq: number): void {
    this.inputSeq = inputSeq;
    this.control({ type: 'resumed', inputSeq, inputCredit: this.inputCredit?.() ?? 0 });
    this.flush();
  }

  /** Kept items go out in order while the call has a connection and credit; then its terminal event. */
  private flush(): void {
    const log = this.log;
    if (!this.attached) return;
    while (log.hasUnsent && this.inner.hasCredit) {
      let frame: Sized;
      try {
        frame = log.nextUnsent((output, seq) => {
          const encoded = this.inner.encode(output, false, seq);
          if (encoded instanceof RpcError) throw encoded;
          return encoded;
        });
      } catch (error) {
        // This connection's codec cannot carry what another one could: the call ends here, with the error.
        log.clear();
        this.owner.failed(cannotEncode(error));
        break;
      }
      log.markSent();
      this.inner.sendCharged(frame, false);
    }
    if (!log.hasUnsent && this.terminalEvent && !this.terminalSent) {
      this.terminalSent = true;
      this.inner.sendCharged(this.inner.encodeTerminal(this.terminalEvent), true);
      this.owner.flushed();
    }
  }
}
