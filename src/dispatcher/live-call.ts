import { Wakeup } from '../flow/index.js';
import { describeZodError, RpcError } from '../protocol/index.js';
import type { IdentityCheck } from './access.js';
import type { Identity } from './identity.js';
import { AdmissionSlot } from './admission-slot.js';
import type { CallObserver, CallOutcome } from './call-observer.js';
import type { CallEvent, CallOutlet, Sized } from './call-outlet.js';
import type { CallOutput, OutputOwner } from './call-output.js';
import { CreditedOutput } from './credited-output.js';
import { OutboundAccount } from './identity-outbound.js';
import type { CallHost, CallLife, CallSettings } from './call-host.js';
import { InputStream } from './input-stream.js';
import { isUnary, type Operation } from './operation.js';
import { toWireError } from './wire-error.js';

/**
 * One admitted call, from admission to its last event: the only place its life is
 * decided. `next`, `answer`, `complete`, `fail`, `terminate` and `cancel` may be called
 * in any order and any number of times; the first terminal one wins and the rest are
 * no-ops, so nothing follows a terminal event (ERR-2, RES-2). It owns the deadline
 * timer, the cancellation, the handler's teardown and the caller's input stream; its
 * output (CallOutput) decides when each frame goes (§4.7–§8).
 */
export class LiveCall implements OutputOwner {
  private life: CallLife = 'admitted';
  // Made when a handler first reads its signal: most unary handlers never do, and an
  // AbortController per call was a measurable share of the server's time.
  private controller: AbortController | undefined;
  private deadlineTimer: ReturnType<typeof setTimeout> | undefined;
  private teardownFn: (() => void) | undefined;
  private readonly room = new Wakeup();
  private inputStream: InputStream | undefined;
  private readonly flow: CreditedOutput;
  private output: CallOutput;
  /** Watches the call's traffic (audit, recording); set once, at admission. */
  observer: CallObserver | undefined;
  /** What the handler checked of its caller's identity, which a resume must pass too (RSM-9). */
  readonly identityChecks: IdentityCheck[] = [];
  /** The identity that last resumed the call (§4.9), when one has: whose the calls it makes from then on are. */
  resumedBy: { readonly identity: Identity | null } | undefined;

  constructor(
    readonly id: string,
    readonly op: Operation,
    readonly maxBufferedBytes: number,
    outlet: CallOutlet,
    private host: CallHost | undefined,
    credit: number | undefined,
    private readonly settings: CallSettings,
    /** Its place under its identity's caps (LIM-3), given back when it ends unless handed over. */
    private readonly admission: AdmissionSlot = AdmissionSlot.none(),
    /** Its identity's output over all its connections (§8, maxOutboundBytesPerIdentity). */
    private readonly account: OutboundAccount = OutboundAccount.none(),
  ) {
    // Output credit applies to streams; a unary call's one answer is never held (§4.8).
    this.flow = new CreditedOutput(outlet, isUnary(op) ? undefined : credit, maxBufferedBytes, this, (error) => host?.lost(error), account);
    this.output = this.flow;
  }

  get state(): CallLife {
    return this.life;
  }

  /** The caller asked for output credit (§4.8). */
  get takesCredit(): boolean {
    return this.output.takesCredit;
  }

  get ended(): boolean {
    return this.life === 'ended' || this.life === 'cancelled';
  }

  /** Ended, with nothing left to send: the connection may forget it. */
  get settled(): boolean {
    return this.ended && this.output.drained;
  }

  /** The call may outlive its connection (§4.9): its output is numbered and kept. */
  get resumable(): boolean {
    return this.output !== this.flow;
  }

  /** The caller's input stream, for operations that declare one (§4.7). */
  get input(): InputStream | undefined {
    return this.inputStream;
  }

  /** The handler's cancellation (ABT-1): already aborted when read after the call was cancelled. */
  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.life === 'cancelled') this.controller.abort(new DOMException('call cancelled', 'AbortError'));
    }
    return this.controller.signal;
  }

  /** This call's own buffer is full (BP-1). */
  get full(): boolean {
    return this.output.full;
  }

  /** A push source that produces now overflows (BP-2): its own buffer is full, or its replay is (§4.9). */
  get overflowing(): boolean {
    return this.output.overflowing;
  }

  /**
   * A pull source waits while this call's buffer is full or its connection's is (BP-1,
   * BP-4), or its replay is (§4.9), or its identity's transports hold half its output bound (§8).
   */
  get mustWait(): boolean {
    return this.output.overflowing || (this.host?.congested ?? false) || this.account.congested;
  }

  /**
   * Tells the caller the call is admitted (CR-1), once: for an operation with an input
   * stream, by granting it `window` bytes of input (IN-1); to a stream under credit with
   * a 0 grant. Without `window`, the caller is told otherwise (a resume's `call.resumed`).
   */
  announce(window?: number): void {
    if (this.life !== 'admitted') return;
    this.life = 'running';
    if (window === undefined) return;
    if (this.op.inputStream) {
      this.openInput(window);
      this.output.grant(window);
    } else if (this.takesCredit) this.output.grant(0);
  }

  /** The input stream its handler reads, before the caller is granted any of it. */
  openInput(window: number): void {
    if (!this.op.inputStream || this.inputStream) return;
    const input = new InputStream(window, (bytes) => this.output.grant(bytes));
    this.inputStream = input;
    this.flow.inputCredit = () => input.callerCredit;
  }

  /** Wraps the call's output (a resumable call's numbering and replay, §4.9). */
  wrapOutput(wrap: (output: CreditedOutput) => CallOutput): void {
    this.output = wrap(this.flow);
  }

  /** The call moves to another connection (or, `host` undefined, to none): its flow follows. */
  moveTo(host: CallHost | undefined, outlet?: CallOutlet, credit?: number): void {
    this.host = host;
    if (outlet) this.flow.moveTo(outlet, credit ?? 0, (error) => host?.lost(error)); // a failed send closes the connection it was on
    if (!this.mustWait) this.room.wake();
  }

  /** The call is about to go elsewhere: the connection that holds it now lets it go, without cancelling it. */
  leaveHost(): void {
    this.host?.handOver(this);
  }

  /** Hands its place under its identity's caps to whoever keeps the call now (LIM-3). */
  handOverAdmission(): AdmissionSlot {
    return this.admission.handOver();
  }

  /** One item of a subscription (RES-3). */
  next(output: unknown): void {
    if (this.ended) return;
    if (this.account.over) return this.dropExcess();
    const frame = this.encode(output, false);
    if (frame instanceof RpcError) return this.terminate(frame);
    this.observer?.output?.(output, frame.byteLength);
    this.output.item(output, frame);
  }

  /** The one answer of a unary call: terminal (RES-1). */
  answer(output: unknown): void {
    if (this.ended) return;
    if (this.account.over) return this.dropExcess();
    const frame = this.encode(output, true);
    if (frame instanceof RpcError) return this.terminate(frame);
    this.observer?.output?.(output, frame.byteLength);
    this.end('ended');
    this.observed({ kind: 'completed' });
    this.output.answer(frame);
    this.host?.ended(this);
  }

  /** The natural end of a subscription (CMP-1). */
  complete(): void {
    this.finish('ended', { kind: 'completed' }, { type: 'completed' });
  }

  /** The handler failed: its error passes the declared-codes filter (ERR-4) and ends the call. */
  fail(error: unknown): void {
    if (this.ended) return;
    const wire = toWireError(this.op, error);
    if (wire.code === 'INTERNAL') {
      this.settings.logger.error('handler failed', { callId: this.id, operation: this.op.name, error: error instanceof Error ? (error.stack ?? error.message) : String(error) });
    }
    this.finish('ended', { kind: 'error', error: wire }, { type: 'error', error: wire });
  }

  /**
   * The dispatcher ends the call (timeout, overflow, shutdown, a bad output or input):
   * the handler is cancelled and the caller hears `error`, a protocol error, as it is.
   */
  terminate(error: RpcError): void {
    this.finish('cancelled', { kind: 'error', error }, { type: 'error', error });
  }

  /**
   * An output came while the call's identity holds its whole output bound (§8): it is
   * dropped, the handler is cancelled, and the caller hears SLOW_CONSUMER after what the
   * call had queued, which is within the bound and so is not dropped with it.
   */
  private dropExcess(): void {
    const error = this.account.excess();
    this.finish('cancelled', { kind: 'error', error }, { type: 'error', error }, 'keep');
  }

  /** Abort, disconnect: the handler is cancelled and nothing more is sent (ABT-1, ABT-2). */
  cancel(): void {
    if (this.ended) {
      // ABT-2: an ended call's frames that still wait for credit are dropped: the caller wants none.
      // For a resumable call, this is also its caller's word that it has everything (§4.9).
      this.output.discard();
      this.host?.discarded(this);
      return;
    }
    this.end('cancelled');
    // A cancelled call has nothing left for anyone: a resumable one's token dies now, not after a grace (RSM-4, RSM-6).
    this.output.discard();
    this.observed({ kind: 'cancelled' });
    this.host?.ended(this);
  }

  /** One `call.input` item (IN-1 … IN-3, CR-2): a bad one ends the call. `seq`: its number, on a resumable call (§4.9). */
  pushInput(item: unknown, frameBytes: number, seq?: number): void {
    const input = this.acceptInput(seq);
    if (!input) return;
    if (!input.hasCredit) return this.terminate(RpcError.of('CREDIT_EXCEEDED', 'input beyond the credit the callee granted')); // CR-2
    const parsed = this.op.inputStream!.safeParse(item);
    if (!parsed.success) return this.terminate(RpcError.of('INVALID_INPUT', describeZodError(parsed.error, 'item'))); // IN-1
    this.observer?.input?.(parsed.data, frameBytes);
    input.push(parsed.data, frameBytes);
  }

  /** The caller's `call.end`, or a stream's half-close: no more input. */
  endInput(seq?: number): void {
    this.acceptInput(seq)?.end();
  }

  /** CR-4: the caller grants more output. `seq`: on a resumable call, the last item the caller has received (§4.9). */
  credit(bytes: number, seq?: number): boolean {
    return this.output.credit(bytes, seq);
  }

  /** The input stream one more input may go to, or undefined: a duplicate dropped, or a bad one that ended the call. */
  private acceptInput(seq: number | undefined): InputStream | undefined {
    if (this.ended) return undefined;
    const numbered = this.output.input(seq);
    if (numbered instanceof RpcError) return void this.terminate(numbered);
    if (numbered === 'drop') return undefined;
    const input = this.inputStream;
    if (!input) return void this.terminate(RpcError.of('INVALID_FRAME', `${this.op.name} takes no input stream`)); // IN-2
    if (input.isEnded) return void this.terminate(RpcError.of('INVALID_FRAME', 'input after call.end')); // IN-3
    return input;
  }

  /** Ends the call with TIMEOUT after `ms`, unless it ended first (DL-1); the timer dies with the call. */
  setDeadline(ms: number): void {
    this.deadlineTimer = setTimeout(() => this.terminate(RpcError.of('TIMEOUT', `deadline of ${ms} ms passed`)), ms);
  }

  /** Sets what cancels the handler's source; runs at once if the call already ended. */
  set teardown(fn: () => void) {
    this.teardownFn = fn;
    if (this.ended) this.runTeardown();
  }

  /** Resolves when the call and its connection have room again, or the call ended. */
  waitForRoom(): Promise<void> {
    if (!this.mustWait || this.ended) return Promise.resolve();
    this.listenForRoom();
    return this.room.wait();
  }

  /** The connection drained below its bound (BP-4), or its identity's output did (§8), or the replay budget has room (§4.9). */
  roomOnConnection(): void {
    if (this.ended) return;
    if (!this.mustWait) this.room.wake();
    else this.listenForRoom();
  }

  released(): void {
    if (!this.mustWait) this.room.wake();
    // A source that waited for its own buffer now waits for the connection's or its identity's: it must hear when that drains.
    else if (!this.full && this.room.waiting) this.listenBeyondOwnBuffer();
  }

  flushed(): void {
    if (this.settled) this.host?.settled(this);
  }

  failed(error: RpcError): void {
    this.terminate(error);
  }

  /** Asks to hear when what holds the call back may have cleared; its own buffer clears by itself. */
  private listenForRoom(): void {
    if (!this.full) this.listenBeyondOwnBuffer();
    this.output.listenForRoom();
  }

  private listenBeyondOwnBuffer(): void {
    if (this.host?.congested) this.host.waitUncongested(this);
    if (this.account.congested) this.account.wait(this);
  }

  private encode(output: unknown, final: boolean): Sized | RpcError {
    let value = output;
    if (this.settings.validateOutput) {
      const checked = this.op.output.safeParse(output);
      if (!checked.success) return new RpcError('INTERNAL', `handler output fails the output schema: ${describeZodError(checked.error, 'output')}`);
      value = checked.data;
    }
    return this.output.encode(value, final);
  }

  /** The terminal event: a call its caller has not yet heard admitted hears that first (CR-1). */
  private finish(life: 'ended' | 'cancelled', outcome: CallOutcome, event: CallEvent, queued: 'keep' | 'drop' = 'drop'): void {
    if (this.ended) return;
    if (this.life === 'admitted') this.announce(this.maxBufferedBytes);
    this.end(life, queued);
    this.observed(outcome);
    this.output.finish(event);
    this.host?.ended(this);
  }

  /**
   * No frame may follow except the terminal one being sent. Fires the AbortSignal
   * and tears the source down in this same turn (ABT-1).
   */
  private end(life: 'ended' | 'cancelled', queued: 'keep' | 'drop' = 'drop'): void {
    this.life = life;
    if (this.deadlineTimer !== undefined) clearTimeout(this.deadlineTimer);
    if (life === 'cancelled') {
      this.controller?.abort(new DOMException('call cancelled', 'AbortError'));
      // Cancelled: what waited for credit is not sent (ABT-2), unless the call's end is to follow it.
      if (queued === 'drop') this.flow.dropHeld();
    }
    this.inputStream?.close();
    this.account.forget(this);
    this.admission.release();
    this.runTeardown();
    this.room.wake();
    this.output.ended();
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
    try {
      fn?.();
    } catch {
      // A teardown that throws must not stop the others (or the connection) from closing.
    }
  }
}
