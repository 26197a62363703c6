import { envelopes, RpcError, type Envelope } from '../protocol/index.js';
import type { InputStream } from './input-stream.js';
import type { Operation } from './operation.js';

/** Where a call's frames go: the connection (WebSocket) or the call's own stream (WebTransport). */
export interface Outlet {
  /** `final`: the call's terminal frame, after which a per-call stream ends. */
  send(frame: Uint8Array, final: boolean): Promise<void>;
}

/** What a call needs from its session. */
export interface CallHost {
  /** RES-4: the output to send, or the error that ends the call instead. */
  checkOutput(call: LiveCall, output: unknown): { ok: true; value: unknown } | { ok: false; error: RpcError };
  /** ERR-4: a handler's error as it goes on the wire; machinery errors pass as they are. */
  wireError(call: LiveCall, error: unknown, byMachinery: boolean): RpcError;
  /** Encodes `envelope` and sends it on the call's outlet, counting its bytes against the call until taken. */
  send(call: LiveCall, envelope: Envelope, final: boolean): void;
  /** The call has ended; the session forgets it. */
  ended(call: LiveCall): void;
  /** More than `maxOutboundBytesPerConnection` bytes of all calls wait for the transport (BP-4). */
  readonly congested: boolean;
  /** Calls `call.roomOnConnection()` once the connection is no longer congested. */
  waitUncongested(call: LiveCall): void;
}

/**
 * One admitted call, from admission to its terminal event: the only place its life
 * is decided. `next`, `answer`, `complete`, `fail` and `cancel` may be called in any
 * order and any number of times; the first terminal one wins and the rest are
 * no-ops, so nothing follows a terminal event (ERR-2, RES-2). It owns the deadline
 * timer, the cancellation, the handler's teardown and the bytes not yet taken by
 * the transport (§8).
 */
export class LiveCall {
  // Made when a handler first reads its signal: most unary handlers never do, and an
  // AbortController per call was 8% of the server's time at 64 calls in flight.
  private controller: AbortController | undefined;
  private cancelled = false;
  private endedFlag = false;
  pendingBytes = 0;
  private deadlineTimer: ReturnType<typeof setTimeout> | undefined;
  private teardownFn: (() => void) | undefined;
  private roomWaiters: (() => void)[] = [];
  /** The caller's input stream, for operations that declare one (§4.7). */
  input: InputStream | undefined;
  /** Output credit the caller granted and has not used (§4.8); undefined: the caller asked for none. */
  outputCredit: number | undefined;
  /** Encodes this stream's output frames; the session makes it at the first one. */
  outputFrames: ((output: unknown) => Uint8Array) | undefined;
  /** Encoded frames waiting for credit, in order; counted in `pendingBytes`. */
  readonly held: { readonly bytes: Uint8Array; readonly final: boolean }[] = [];

  constructor(
    readonly id: string,
    readonly op: Operation,
    readonly maxBufferedBytes: number,
    readonly outlet: Outlet,
    private readonly host: CallHost,
  ) {}

  get ended(): boolean {
    return this.endedFlag;
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

  /** A pull source waits while this call's buffer is full or its connection's is (BP-1, BP-4). */
  get mustWait(): boolean {
    return this.full || this.host.congested;
  }

  /** One item of a subscription (RES-3). */
  next(output: unknown): void {
    if (this.endedFlag) return;
    const checked = this.host.checkOutput(this, output);
    if (!checked.ok) return this.fail(checked.error, true);
    this.host.send(this, envelopes.responded(this.id, checked.value), false);
  }

  /** The one answer of a unary call: terminal (RES-1). */
  answer(output: unknown): void {
    if (this.endedFlag) return;
    const checked = this.host.checkOutput(this, output);
    if (!checked.ok) return this.fail(checked.error, true);
    this.end(false);
    this.host.send(this, envelopes.responded(this.id, checked.value), true);
  }

  /** The natural end of a subscription (CMP-1). */
  complete(): void {
    if (this.endedFlag) return;
    this.end(false);
    this.host.send(this, envelopes.completed(this.id), true);
  }

  /**
   * Ends the call with `call.error`. `byMachinery`: the dispatcher ends it (timeout,
   * overflow, shutdown, a bad output) and cancels the handler; otherwise the
   * handler itself failed, and its error passes the declared-codes filter.
   */
  fail(error: unknown, byMachinery = false): void {
    if (this.endedFlag) return;
    const wire = this.host.wireError(this, error, byMachinery);
    this.end(byMachinery);
    this.host.send(this, envelopes.error(this.id, wire.toPayload()), true);
  }

  /** Abort, disconnect: the handler is cancelled and nothing more is sent (ABT-1, ABT-2). */
  cancel(): void {
    if (this.endedFlag) return;
    this.end(true);
  }

  /** Ends the call with TIMEOUT after `ms`, unless it ended first (DL-1); the timer dies with the call. */
  setDeadline(ms: number): void {
    this.deadlineTimer = setTimeout(() => this.fail(RpcError.of('TIMEOUT', `deadline of ${ms} ms passed`), true), ms);
  }

  /** Sets what cancels the handler's source; runs at once if the call already ended. */
  set teardown(fn: () => void) {
    this.teardownFn = fn;
    if (this.endedFlag) this.runTeardown();
  }

  /** Resolves when the call and its connection have room again, or the call ended. */
  waitForRoom(): Promise<void> {
    if (!this.mustWait || this.endedFlag) return Promise.resolve();
    if (!this.full) this.host.waitUncongested(this);
    return new Promise((resolve) => this.roomWaiters.push(resolve));
  }

  /** The transport took `bytes` of this call's frames. */
  released(bytes: number): void {
    this.pendingBytes -= bytes;
    if (!this.mustWait) this.wakeWaiters();
  }

  /** The connection drained below its bound (BP-4). */
  roomOnConnection(): void {
    if (!this.mustWait) this.wakeWaiters();
    else if (!this.full) this.host.waitUncongested(this);
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
      for (const frame of this.held.splice(0)) this.pendingBytes -= frame.bytes.byteLength;
    }
    this.input?.close();
    this.runTeardown();
    this.wakeWaiters();
    this.host.ended(this);
  }

  private runTeardown(): void {
    const fn = this.teardownFn;
    this.teardownFn = undefined;
    if (!fn) return;
    try {
      fn();
    } catch {
      // A teardown that throws must not stop the others (or the session) from closing.
    }
  }

  private wakeWaiters(): void {
    const waiters = this.roomWaiters;
    this.roomWaiters = [];
    for (const wake of waiters) wake();
  }
}
