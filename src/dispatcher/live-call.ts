import { describeZodError, RpcError } from '../protocol/index.js';
import type { IdentityCheck } from './access.js';
import type { CallObserver, CallOutcome } from './call-observer.js';
import type { CallEvent, CallOutlet, Sized } from './call-outlet.js';
import type { Logger } from './identity.js';
import { InputStream } from './input-stream.js';
import type { ReplayLog } from './replay-log.js';
import { isUnary, type Operation } from './operation.js';
import { resumedElsewhere, toWireError } from './wire-error.js';

/** What a call needs from the connection it runs on (CallTable). */
export interface CallHost {
  /** RES-4: outputs are checked against the operation's output schema. */
  readonly validateOutput: boolean;
  readonly logger: Logger;
  /** More than `maxOutboundBytesPerConnection` bytes of all calls wait for the transport (BP-4). */
  readonly congested: boolean;
  /** Calls `call.roomOnConnection()` once the connection is no longer congested. */
  waitUncongested(call: LiveCall): void;
  /** The call has ended, its terminal frame queued (or none, when cancelled): its id is free again. */
  ended(call: LiveCall): void;
  /** The ended call has nothing more to send (its held frames went, or were dropped). */
  settled(call: LiveCall): void;
  /** Delivery failed: the connection is gone. */
  lost(error: unknown): void;
  /** The ended call's caller wants nothing more of it (a resumable call's record may go, §4.9). */
  discarded(call: LiveCall): void;
  /** The call moves to another connection (a resume, §4.9): forget it without cancelling it. */
  handOver(call: LiveCall): void;
}

interface Held {
  readonly frame: Sized;
  readonly final: boolean;
}

/**
 * One admitted call, from admission to its last frame: the only place its life and
 * its flow are decided, and the only writer of its state. `next`, `answer`,
 * `complete`, `fail`, `terminate` and `cancel` may be called in any order and any
 * number of times; the first terminal one wins and the rest are no-ops, so nothing
 * follows a terminal event (ERR-2, RES-2). It owns the deadline timer, the
 * cancellation, the handler's teardown, the caller's input stream, output credit,
 * the frames held for it, and the bytes the transport has not yet taken (§4.7–§8).
 */
export class LiveCall {
  // Made when a handler first reads its signal: most unary handlers never do, and an
  // AbortController per call was a measurable share of the server's time.
  private controller: AbortController | undefined;
  private cancelled = false;
  private endedFlag = false;
  /** Bytes handed to the outlet and not yet taken, plus those held for credit (BP-1). */
  private pendingBytes = 0;
  private deadlineTimer: ReturnType<typeof setTimeout> | undefined;
  private teardownFn: (() => void) | undefined;
  private roomWaiters: (() => void)[] = [];
  /** Output credit the caller granted and has not used (§4.8); undefined: the caller asked for none. */
  private outputCredit: number | undefined;
  /** Encoded frames waiting for credit, in order; counted in `pendingBytes`. */
  private readonly held: Held[] = [];
  private inputStream: InputStream | undefined;
  /** §4.9: a resumable call's numbered output, kept until its caller acknowledges it. */
  private replay: ReplayLog | undefined;
  /** A resumable call's terminal event, sent once every kept item has gone. */
  private terminalEvent: CallEvent | undefined;
  private terminalSent = false;
  private attached = true;
  /** Counts the connections the call has been on: bytes in flight on an old one no longer count (BP-1). */
  private epoch = 0;
  /** The last input sequence number received, on a resumable call (§4.9). */
  private inputSeq = 0;
  /** Gives back the call's place under its identity's caps (LIM-3); run when the call ends. */
  releaseAdmission: (() => void) | undefined;
  /** Watches the call's traffic (audit, recording); set once, at admission. */
  observer: CallObserver | undefined;
  /** Hears each output acknowledgement of the caller's, on a resumable call (a relay, §4.9). */
  onAcknowledged: ((seq: number) => void) | undefined;
  /** Hears once that nothing of the call is kept any more (a relay, §4.9). */
  onForgotten: (() => void) | undefined;
  /** What the handler checked of its caller's identity, which a resume must pass too (RSM-9). */
  readonly identityChecks: IdentityCheck[] = [];
  /** Runs once just before the call's terminal event is queued: a relay admits a call it never heard upstream admit. */
  beforeTerminal: (() => void) | undefined;

  constructor(
    readonly id: string,
    readonly op: Operation,
    readonly maxBufferedBytes: number,
    private outlet: CallOutlet,
    private host: CallHost,
    credit: number | undefined,
  ) {
    // Output credit applies to streams; a unary call's one answer is never held (§4.8).
    this.outputCredit = isUnary(op) ? undefined : credit;
  }

  /** The caller asked for output credit (§4.8). */
  get takesCredit(): boolean {
    return this.outputCredit !== undefined;
  }

  get ended(): boolean {
    return this.endedFlag;
  }

  /** Ended, with nothing left to send: the connection may forget it. */
  get settled(): boolean {
    return this.endedFlag && (this.replay ? this.terminalSent : this.held.length === 0);
  }

  /** On a connection; false while a resumable call waits for its caller (§4.9). */
  get isAttached(): boolean {
    return this.attached;
  }

  /** The call may outlive its connection (§4.9). */
  get resumable(): boolean {
    return this.replay !== undefined;
  }

  /** The caller's input stream, for operations that declare one (§4.7). */
  get input(): InputStream | undefined {
    return this.inputStream;
  }

  /** The handler's cancellation (ABT-1): already aborted when read after the call was cancelled. */
  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.cancelled) this.controller.abort(new DOMException('call cancelled', 'AbortError'));
    }
    return this.controller.signal;
  }

  /** This call's own buffer is full (BP-1): a push source that overflows it ends the call (BP-2). */
  get full(): boolean {
    return this.pendingBytes >= this.maxBufferedBytes;
  }

  /** A push source that produces now overflows (BP-2): its own buffer is full, or its replay is (§4.9). */
  get overflowing(): boolean {
    return this.full || (this.replay?.full ?? false);
  }

  /** A pull source waits while this call's buffer is full or its connection's is (BP-1, BP-4), or its replay is (§4.9). */
  get mustWait(): boolean {
    return this.full || this.host.congested || (this.replay?.full ?? false);
  }

  /**
   * Tells the caller the call is admitted (CR-1): for an operation with an input
   * stream, by granting it `window` bytes of input (IN-1); otherwise with a 0 grant.
   */
  admitted(window: number): void {
    if (this.op.inputStream) {
      this.openInput(window);
      this.grant(window);
    } else this.grant(0);
  }

  /** The input stream its handler reads, before the caller is granted any of it. */
  openInput(window: number): void {
    if (this.op.inputStream) this.inputStream ??= new InputStream(window, (bytes) => this.grant(bytes));
  }

  // Resuming (§4.9) ------------------------------------------------------------

  /** Makes the call resumable: its output is numbered and kept in `log`, and its caller hears the token first. */
  makeResumable(log: ReplayLog, token: string, graceMs: number, announce = true): void {
    this.replay = log;
    if (announce) this.sendControl({ type: 'resumable', token, graceMs });
  }

  /**
   * A call taken up from another server (§4.9) is now held there again, with input up to
   * `inputSeq`: its caller hears `call.resumed`, with the credit of this call's own input
   * stream, then the call goes on here.
   */
  takenUp(inputSeq: number): void {
    this.inputSeq = inputSeq;
    this.sendControl({ type: 'resumed', inputSeq, inputCredit: this.inputStream?.callerCredit ?? 0 });
    this.flushReplay();
  }

  /** The connection is lost: the call runs on, its output kept, until it is resumed or its grace ends. */
  detach(host: CallHost): void {
    this.attached = false;
    this.host = host;
    this.replay?.forgetFrames();
    // A source that waited for the lost connection to drain may now fill the replay instead.
    if (!this.mustWait) this.wakeWaiters();
  }

  /**
   * A new connection takes the call up after output `seq`, with a fresh output window:
   * it hears what input the callee has, then every item after `seq`, then the
   * terminal event if the call has ended; then the call goes on.
   */
  reattach(outlet: CallOutlet, host: CallHost, seq: number, credit: number): void {
    // RSM-10: a connection the call is taken from while it still holds it (one that has not noticed it
    // is lost, or another caller's) hears a clear end, unless it already had the call's terminal event.
    if (this.attached && !this.terminalSent) this.transmit(this.encodeTerminal({ type: 'error', error: resumedElsewhere() }), true, false);
    this.epoch++;
    this.pendingBytes = 0;
    this.outlet = outlet;
    this.host = host;
    this.attached = true;
    this.outputCredit = credit;
    this.terminalSent = false;
    this.replay!.rewind(seq);
    this.sendControl({ type: 'resumed', inputSeq: this.inputSeq, inputCredit: this.inputStream?.callerCredit ?? 0 });
    this.flushReplay();
    if (!this.mustWait) this.wakeWaiters();
  }

  /** Whether a caller that has received up to output `seq` can be given everything after it (§4.9). */
  replaysAfter(seq: number): boolean {
    return this.replay?.keepsAfter(seq) ?? false;
  }

  /** The call is about to be resumed elsewhere: whatever holds it now lets it go, without cancelling it. */
  leaveHost(): void {
    this.host.handOver(this);
  }

  /** Nothing of the call is kept any more (its record is gone): its replay's bytes go back. */
  forgetReplay(): void {
    this.replay?.clear();
    this.terminalSent = true;
    const forgotten = this.onForgotten;
    this.onForgotten = undefined;
    forgotten?.();
  }

  // What the handler produces -------------------------------------------------

  /** One item of a subscription (RES-3). */
  next(output: unknown): void {
    if (this.endedFlag) return;
    const seq = this.replay?.nextSeq;
    const frame = this.encodeOutput(output, false, seq);
    if (frame instanceof RpcError) return this.terminate(frame);
    this.observer?.output?.(output, frame.byteLength);
    if (this.replay) {
      this.replay.append(output, frame, this.attached);
      return this.flushReplay();
    }
    this.queue(frame, false);
  }

  /** The one answer of a unary call: terminal (RES-1). */
  answer(output: unknown): void {
    if (this.endedFlag) return;
    const frame = this.encodeOutput(output, true);
    if (frame instanceof RpcError) return this.terminate(frame);
    this.observer?.output?.(output, frame.byteLength);
    this.end(false);
    this.observed({ kind: 'completed' });
    this.queue(frame, true);
    this.host.ended(this);
  }

  /** The natural end of a subscription (CMP-1). */
  complete(): void {
    if (this.endedFlag) return;
    this.end(false);
    this.observed({ kind: 'completed' });
    this.finish({ type: 'completed' });
    this.host.ended(this);
  }

  /** The handler failed: its error passes the declared-codes filter (ERR-4) and ends the call. */
  fail(error: unknown): void {
    if (this.endedFlag) return;
    const wire = toWireError(this.op, error);
    if (wire.code === 'INTERNAL') {
      this.host.logger.error('handler failed', { callId: this.id, operation: this.op.name, error: error instanceof Error ? (error.stack ?? error.message) : String(error) });
    }
    this.end(false);
    this.observed({ kind: 'error', error: wire });
    this.finish({ type: 'error', error: wire });
    this.host.ended(this);
  }

  /**
   * The dispatcher ends the call (timeout, overflow, shutdown, a bad output or input):
   * the handler is cancelled and the caller hears `error`, a protocol error, as it is.
   */
  terminate(error: RpcError): void {
    if (this.endedFlag) return;
    this.end(true);
    this.observed({ kind: 'error', error });
    this.finish({ type: 'error', error });
    this.host.ended(this);
  }

  /** Abort, disconnect: the handler is cancelled and nothing more is sent (ABT-1, ABT-2). */
  cancel(): void {
    if (this.endedFlag) {
      // ABT-2: an ended call's frames that still wait for credit are dropped: the caller wants none.
      // For a resumable call, this is also its caller's word that it has everything (§4.9).
      this.forgetReplay();
      this.dropHeld();
      this.host.discarded(this);
      return;
    }
    this.end(true);
    this.forgetReplay();
    this.observed({ kind: 'cancelled' });
    this.host.ended(this);
    // A cancelled call has nothing left for anyone: its token dies now, not after a grace (RSM-4, RSM-6).
    if (this.replay) this.host.discarded(this);
  }

  // What the caller sends -----------------------------------------------------

  /** One `call.input` item (IN-1 … IN-3, CR-2): a bad one ends the call. `seq`: its number, on a resumable call (§4.9). */
  pushInput(item: unknown, frameBytes: number, seq?: number): void {
    if (this.endedFlag || this.duplicateInput(seq)) return;
    const input = this.inputStream;
    if (!input) return this.terminate(RpcError.of('INVALID_FRAME', `${this.op.name} takes no input stream`)); // IN-2
    if (input.isEnded) return this.terminate(RpcError.of('INVALID_FRAME', 'input after call.end')); // IN-3
    if (!input.hasCredit) return this.terminate(RpcError.of('CREDIT_EXCEEDED', 'input beyond the credit the callee granted')); // CR-2
    const parsed = this.op.inputStream!.safeParse(item);
    if (!parsed.success) return this.terminate(RpcError.of('INVALID_INPUT', describeZodError(parsed.error, 'item'))); // IN-1
    this.observer?.input?.(parsed.data, frameBytes);
    input.push(parsed.data, frameBytes);
  }

  /** The caller's `call.end`, or a stream's half-close: no more input. */
  endInput(seq?: number): void {
    if (this.endedFlag || this.duplicateInput(seq)) return;
    const input = this.inputStream;
    if (!input) return this.terminate(RpcError.of('INVALID_FRAME', `${this.op.name} takes no input stream`)); // IN-2
    if (input.isEnded) return this.terminate(RpcError.of('INVALID_FRAME', 'input after call.end')); // IN-3
    input.end();
  }

  /**
   * CR-4: the caller grants more output; frames that waited for it go out now. `seq`:
   * on a resumable call, the last item the caller has received (§4.9). False: this
   * call asked for no credit.
   */
  credit(bytes: number, seq?: number): boolean {
    if (this.outputCredit === undefined) return false;
    this.outputCredit += bytes;
    if (this.replay) {
      if (seq !== undefined) {
        this.replay.ack(seq);
        this.onAcknowledged?.(seq);
      }
      this.flushReplay();
      if (!this.mustWait) this.wakeWaiters();
    } else this.flush();
    return true;
  }

  /**
   * §4.9: a resumable call's input is numbered. What the callee already has is sent
   * again after a resume and dropped here; a gap is a broken caller.
   */
  private duplicateInput(seq: number | undefined): boolean {
    if (!this.replay) return false;
    if (seq === undefined || seq > this.inputSeq + 1) {
      this.terminate(RpcError.of('INVALID_FRAME', `a resumable call's input must be numbered in order: expected seq ${this.inputSeq + 1}`));
      return true;
    }
    if (seq <= this.inputSeq) return true;
    this.inputSeq = seq;
    return false;
  }

  // Deadline, teardown, room --------------------------------------------------

  /** Ends the call with TIMEOUT after `ms`, unless it ended first (DL-1); the timer dies with the call. */
  setDeadline(ms: number): void {
    this.deadlineTimer = setTimeout(() => this.terminate(RpcError.of('TIMEOUT', `deadline of ${ms} ms passed`)), ms);
  }

  /** Sets what cancels the handler's source; runs at once if the call already ended. */
  set teardown(fn: () => void) {
    this.teardownFn = fn;
    if (this.endedFlag) this.runTeardown();
  }

  /** Resolves when the call and its connection have room again, or the call ended. */
  waitForRoom(): Promise<void> {
    if (!this.mustWait || this.endedFlag) return Promise.resolve();
    this.listenForRoom();
    return new Promise((resolve) => this.roomWaiters.push(resolve));
  }

  /** The connection drained below its bound (BP-4), or the replay budget has room (§4.9). */
  roomOnConnection(): void {
    if (this.endedFlag) return;
    if (!this.mustWait) this.wakeWaiters();
    else this.listenForRoom();
  }

  /** Asks to hear when what holds the call back may have cleared; its own buffer and replay clear by themselves. */
  private listenForRoom(): void {
    if (!this.full && this.host.congested) this.host.waitUncongested(this);
    if (this.replay?.full && !this.replay.overOwnBound) this.replay.waitForBudget(this);
  }

  // The flow of frames (§4.8, §8) ---------------------------------------------

  /** A `call.credit` to the caller: never held for credit itself, so it can never deadlock. */
  private grant(bytes: number): void {
    this.sendControl(this.replay ? { type: 'credit', bytes, seq: this.inputSeq } : { type: 'credit', bytes });
  }

  /** An event about the call's flow, not its output: sent now, never held. Lost with a lost connection (a resume restates it). */
  private sendControl(event: CallEvent): void {
    if (!this.attached) return;
    let frame: Sized;
    try {
      frame = this.outlet.encode(event);
    } catch (error) {
      return this.terminate(cannotEncode(error));
    }
    this.transmit(frame, false, false);
  }

  /** The call's terminal event: sent once what comes before it has gone (CR-5; for a resumable call, every kept item). */
  private finish(event: CallEvent): void {
    const before = this.beforeTerminal;
    this.beforeTerminal = undefined;
    before?.();
    if (!this.replay) return this.queue(this.encodeTerminal(event), true);
    this.terminalEvent = event;
    this.flushReplay();
  }

  /**
   * A resumable call's kept items go out in order while it has a connection and credit
   * (§4.8, §4.9); then its terminal event. What is sent stays kept until acknowledged.
   */
  private flushReplay(): void {
    const log = this.replay!;
    if (!this.attached) return;
    while (log.hasUnsent && this.outputCredit! > 0) {
      let frame: Sized;
      try {
        frame = log.nextUnsent((output, seq) => this.outlet.encode({ type: 'output', output, final: false, seq }));
      } catch (error) {
        // This connection's codec cannot carry what another one could: the call ends here, with the error.
        log.clear();
        if (!this.endedFlag) this.terminate(cannotEncode(error));
        break;
      }
      log.markSent();
      this.outputCredit! -= frame.byteLength;
      this.transmit(frame, false, false);
    }
    if (!log.hasUnsent && this.terminalEvent && !this.terminalSent) {
      this.terminalSent = true;
      this.transmit(this.encodeTerminal(this.terminalEvent), true, false);
      this.host.settled(this);
    }
  }

  private encodeOutput(output: unknown, final: boolean, seq?: number): Sized | RpcError {
    let value = output;
    if (this.host.validateOutput) {
      const checked = this.op.output.safeParse(output);
      if (!checked.success) return new RpcError('INTERNAL', `handler output fails the output schema: ${describeZodError(checked.error, 'output')}`);
      value = checked.data;
    }
    try {
      return this.outlet.encode(seq === undefined ? { type: 'output', output: value, final } : { type: 'output', output: value, final, seq });
    } catch (error) {
      // e.g. a BigInt under the JSON codec, or a frame over maxFrameBytes: the call fails, the connection lives.
      return cannotEncode(error);
    }
  }

  /** A terminal event's frame; one that cannot be encoded becomes a plain INTERNAL error, which always can. */
  private encodeTerminal(event: CallEvent): Sized {
    try {
      return this.outlet.encode(event);
    } catch (error) {
      return this.outlet.encode({ type: 'error', error: cannotEncode(error) });
    }
  }

  /**
   * Frames leave in order; a non-terminal output frame needs positive credit and is
   * charged its size; a terminal frame needs none but waits behind the frames before it.
   */
  private queue(frame: Sized, final: boolean): void {
    if (this.outputCredit === undefined || (this.held.length === 0 && (final || this.outputCredit > 0))) {
      // The common case, kept off the queue: nothing waits, and there is credit (or no need of it).
      if (!final && this.outputCredit !== undefined) this.outputCredit -= frame.byteLength;
      this.transmit(frame, final, false);
    } else {
      this.held.push({ frame, final });
      this.pendingBytes += frame.byteLength;
      this.flush();
    }
  }

  private flush(): void {
    while (this.held.length > 0) {
      const head = this.held[0]!;
      if (!head.final && this.outputCredit! <= 0) break;
      this.held.shift();
      if (!head.final) this.outputCredit! -= head.frame.byteLength;
      this.transmit(head.frame, head.final, true);
    }
    if (this.settled) this.host.settled(this);
  }

  /** Hands one frame to the outlet, counting its bytes against the call until taken (BP-1). */
  private transmit(frame: Sized, final: boolean, counted: boolean): void {
    const size = frame.byteLength;
    if (!counted) this.pendingBytes += size;
    // A send that fails tells the connection it was on, which may no longer be the call's (§4.9).
    const host = this.host;
    const epoch = this.epoch;
    this.outlet.send(frame, final).then(
      () => this.released(size, epoch),
      (error: unknown) => {
        this.released(size, epoch);
        host.lost(error);
      },
    );
  }

  private released(bytes: number, epoch: number): void {
    if (epoch !== this.epoch) return;
    this.pendingBytes -= bytes;
    if (!this.mustWait) this.wakeWaiters();
    // A source that waited for its own buffer now waits for the connection's: it must hear when that drains.
    else if (!this.full && this.roomWaiters.length > 0) this.host.waitUncongested(this);
  }

  private dropHeld(): void {
    for (const frame of this.held.splice(0)) this.pendingBytes -= frame.frame.byteLength;
    this.host.settled(this);
  }

  /**
   * No frame may follow except the terminal one being sent. Fires the AbortSignal
   * and tears the source down in this same turn (ABT-1).
   */
  private end(cancelHandler: boolean): void {
    this.endedFlag = true;
    if (this.deadlineTimer !== undefined) clearTimeout(this.deadlineTimer);
    if (cancelHandler) {
      this.cancelled = true;
      this.controller?.abort(new DOMException('call cancelled', 'AbortError'));
      // Cancelled: what waited for credit is not sent (ABT-2).
      for (const frame of this.held.splice(0)) this.pendingBytes -= frame.frame.byteLength;
    }
    this.inputStream?.close();
    const release = this.releaseAdmission;
    this.releaseAdmission = undefined;
    release?.();
    this.runTeardown();
    this.wakeWaiters();
    this.replay?.stopWaiting(this);
  }

  private observed(outcome: CallOutcome): void {
    const observer = this.observer;
    this.observer = undefined;
    try {
      observer?.ended?.(outcome);
    } catch {
      // An observer's failure is its own: the call ends all the same.
    }
  }

  private runTeardown(): void {
    const fn = this.teardownFn;
    this.teardownFn = undefined;
    if (!fn) return;
    try {
      fn();
    } catch {
      // A teardown that throws must not stop the others (or the connection) from closing.
    }
  }

  private wakeWaiters(): void {
    const waiters = this.roomWaiters;
    this.roomWaiters = [];
    for (const wake of waiters) wake();
  }
}

function cannotEncode(error: unknown): RpcError {
  if (error instanceof RpcError) return error;
  return new RpcError('INTERNAL', `output cannot be encoded: ${error instanceof Error ? error.message : String(error)}`);
}
