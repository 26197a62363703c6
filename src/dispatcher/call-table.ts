import { RpcError, type ResumePayload } from '../protocol/index.js';
import { admit, callerIdentity, duplicateCallId, type AdmissionRules, type CallRequest } from './admission.js';
import type { ObserveCalls, ObserveRefusals } from './call-observer.js';
import type { CallOutlet } from './call-outlet.js';
import { bindLogger, type Identity, type Logger } from './identity.js';
import { LiveCall, type CallHost } from './live-call.js';
import { isUnary, type CallContext, type ResumeRelay } from './operation.js';
import { pumpStream, pumpUnary } from './pump.js';
import type { ResumeRegistry } from './resume-registry.js';

/** What a connection's calls share with the whole server. */
export interface CallTableOptions {
  readonly rules: AdmissionRules;
  readonly logger: Logger;
  /** RES-4: outputs are checked against the operation's output schema. */
  readonly validateOutput: boolean;
  /** Whether the server still takes new calls (false once shutdown has begun). */
  readonly accepting: () => boolean;
  /**
   * BP-4: whether the connection's one channel holds more than its bound; the
   * transport counts, and calls `drained()` when it no longer does. Absent: a
   * connection whose calls each have their own flow control (a stream per call).
   */
  readonly congested?: () => boolean;
  /** Watches each admitted call (audit, recording). */
  readonly observe?: ObserveCalls;
  /** The server's resumable calls (§4.9); absent: no call of this connection outlives it. */
  readonly resume?: ResumeRegistry;
  /** Told of each call refused at admission (audit). */
  readonly observeRefusals?: ObserveRefusals;
  /** The connection's callers never acknowledge output (plain HTTP, §5.6): a resumable call keeps the last of what it sent. */
  readonly unacknowledgedOutput?: boolean;
  /** Called once, when the table has closed. */
  readonly onClose?: () => void;
}

export interface CallTableStats {
  readonly liveCalls: number;
  readonly callsStarted: number;
}

/**
 * The calls of one connection, whatever the transport: ids (ID-2), the in-flight
 * cap, admission, and the connection's congestion (§4–§9). `start` is the one way a
 * call begins; the transport adapters (frames, HTTP, in memory) translate their
 * wire into requests and hand each call an outlet for its events.
 */
export class CallTable implements CallHost {
  private readonly live = new Map<string, LiveCall>();
  /** Calls that have ended with frames still waiting for the caller's credit (§4.8). */
  private readonly draining = new Map<string, LiveCall>();
  /** Resumable calls that have ended and sent everything, kept until their caller lets them go (§4.9). */
  private readonly retained = new Map<string, LiveCall>();
  /** Pull sources paused because the whole connection, not their own call, is full. */
  private readonly waitingOnConnection = new Set<LiveCall>();
  private idleWaiters: (() => void)[] = [];
  private accepting = true;
  private closed = false;
  private callsStarted = 0;

  constructor(private readonly options: CallTableOptions) {}

  get stats(): CallTableStats {
    return { liveCalls: this.live.size, callsStarted: this.callsStarted };
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /**
   * Admits and starts a call, or returns the refusal its caller must hear (on the
   * outlet the transport chooses: a refusal of a duplicate id must not end the
   * stream the live call may be using).
   */
  start(request: CallRequest, identity: Identity | null, outlet: CallOutlet): LiveCall | RpcError {
    const { id } = request;
    const limits = this.options.rules.limits;
    const byConnection = this.refusedByConnection(id);
    if (byConnection) return byConnection;
    const admitted = admit(this.options.rules, request, identity);
    if (admitted instanceof RpcError) return this.refused(request, identity, admitted);
    const { op } = admitted;
    const call = new LiveCall(id, op, limits.maxBufferedBytesPerCall, outlet, this, request.payload.credit);
    call.releaseAdmission = admitted.release;
    // An observer's `end` may come from inside its own hooks: the call ends in a later turn, not under them.
    const end = (error: RpcError): void => void setImmediate(() => call.terminate(error));
    call.observer = this.options.observe?.({ id, operation: op, identity: admitted.identity, input: admitted.input, requestBytes: request.sizeBytes, end });
    this.place(call);
    let deadlineAt: number | undefined;
    const deadlineMs = request.payload.deadline_ms;
    if (deadlineMs !== undefined) {
      const budget = Math.min(deadlineMs, limits.maxDeadlineMs);
      deadlineAt = Date.now() + budget;
      call.setDeadline(budget); // DL-1
    }
    // §4.9: a stream under credit may outlive its connection; its caller hears the token first.
    const asked = request.payload.resume?.grace_ms;
    const registry = asked !== undefined && call.takesCredit && this.options.resume?.enabled ? this.options.resume : undefined;
    // An input stream's first grant, or a 0 grant to a stream that asked for credit, says the call is admitted.
    const admitNow = (): void => {
      if (op.inputStream || call.takesCredit) call.admitted(limits.maxBufferedBytesPerCall);
    };
    let relay: ResumeRelay | undefined;
    if (!isUnary(op) && op.relaysResume) {
      // Resumable with the token of the stream it relays, known once that is admitted: until then the caller hears nothing (RSM-1).
      call.openInput(limits.maxBufferedBytesPerCall);
      let offered = false;
      relay = {
        offer: (token) => {
          if (offered) return false;
          offered = true;
          const resumable = token !== null && registry !== undefined && !call.ended;
          if (resumable) registry.offer(call, admitted.identity, asked!, this.options.unacknowledgedOutput, { token });
          admitNow();
          return resumable && !this.options.unacknowledgedOutput;
        },
        onAcknowledged: (listener) => (call.onAcknowledged = listener),
        resumed: () => undefined,
        onForgotten: (listener) => (call.onForgotten = listener),
      };
      // A call that fails before upstream admits it (a container no host holds) was still admitted here: CR-1, then its error.
      call.beforeTerminal = () => relay?.offer(null);
    } else {
      registry?.offer(call, admitted.identity, asked!, this.options.unacknowledgedOutput);
      admitNow();
    }
    const ctx = this.context(call, admitted.identity, deadlineAt, relay);
    if (isUnary(op)) pumpUnary(call, op, admitted.input, ctx);
    else pumpStream(call, op, admitted.input, ctx);
    return call;
  }

  /** A new call in this table under `id` (ID-3: an ended one its caller let go of is forgotten). */
  private place(call: LiveCall): void {
    this.live.set(call.id, call);
    this.draining.delete(call.id);
    const previous = this.retained.get(call.id);
    if (previous) this.options.resume?.forget(previous); // ID-3: its caller reuses the id, so it has it all
    this.retained.delete(call.id);
    this.callsStarted++;
  }

  private context(call: LiveCall, identity: Identity | null, deadlineAt: number | undefined, relay: ResumeRelay | undefined): CallContext {
    const tableLogger = this.options.logger;
    const { id } = call;
    const operation = call.op.name;
    let logger: CallContext['logger'] | undefined;
    return {
      callId: id,
      operation,
      identity,
      get signal() {
        return call.signal;
      },
      // Bound when first read, as the signal is: most handlers never log.
      get logger() {
        return (logger ??= bindLogger(tableLogger, { callId: id, operation }));
      },
      deadlineAt,
      input: call.input,
      ...(relay ? { relay } : {}),
      routedTo: (host) => {
        try {
          call.observer?.routed?.(host);
        } catch {
          // An observer's failure is its own (combineObservers logs it): the call goes on.
        }
      },
      requireOnResume: (check) => void call.identityChecks.push(check),
    };
  }

  private refused(request: CallRequest, identity: Identity | null, error: RpcError): RpcError {
    const token = request.payload.auth_token;
    const tokenIdentity = token === undefined ? undefined : this.options.rules.authenticate?.(token);
    this.options.observeRefusals?.({ id: request.id, operationId: request.payload.operationId, identity: tokenIdentity ?? identity, requestBytes: request.sizeBytes, error });
    return error;
  }

  /**
   * What this connection refuses before any admission rule, to a new call and a resumed
   * one alike: a live id (ID-2), a server shutting down, a connection at its in-flight cap
   * (REQ-1). A call whose frames still wait for credit is in flight until they leave: it
   * holds memory until then. One that `id` names is replaced (ID-3), so it does not count.
   */
  private refusedByConnection(id: string): RpcError | undefined {
    const { maxCallsInFlight } = this.options.rules.limits;
    if (this.live.has(id)) return duplicateCallId(id);
    if (this.closed || !this.accepting || !this.options.accepting()) return RpcError.of('UNAVAILABLE', 'the server is shutting down');
    const inFlight = this.live.size + this.draining.size - (this.draining.has(id) ? 1 : 0);
    if (inFlight >= maxCallsInFlight) {
      return RpcError.of('LIMIT_EXCEEDED', `at most ${maxCallsInFlight} calls may be in flight on one connection, those whose output waits for credit included`);
    }
    return undefined;
  }

  /** The live call with this id. */
  get(id: string): LiveCall | undefined {
    return this.live.get(id);
  }

  /** The live call with this id, or the ended one whose frames still wait for credit or for its caller's release (§4.9). */
  find(id: string): LiveCall | undefined {
    return this.live.get(id) ?? this.draining.get(id) ?? this.retained.get(id);
  }

  /**
   * §4.9: takes up a resumable call on this connection, from wherever it was (no
   * connection, or one that has not yet noticed it is gone), or returns the refusal.
   */
  resume(id: string, payload: ResumePayload, connectionIdentity: Identity | null, outlet: CallOutlet): LiveCall | RpcError {
    const registry = this.options.resume;
    const byConnection = this.refusedByConnection(id);
    if (byConnection) return byConnection;
    const identity = callerIdentity(this.options.rules, payload.auth_token, connectionIdentity);
    if (identity instanceof RpcError) return identity;
    if (!registry) return RpcError.of('NOT_FOUND', 'this connection cannot resume calls');
    const call = registry.claim(payload.token, id, identity);
    // A token this server holds, refused for the asker's access (RSM-9), is answered as it is: it names no other server's call.
    if (call instanceof RpcError) return call.code === 'NOT_FOUND' ? (this.adopt(id, payload, identity, outlet) ?? call) : call;
    if (!call.replaysAfter(payload.seq)) {
      // Never a silent gap (§4.9): a caller that can no longer have what follows its position loses the call.
      registry.forget(call);
      call.cancel();
      return new RpcError('UNAVAILABLE', `the output after item ${payload.seq} is no longer kept; the call was ended`, { retryable: false });
    }
    call.leaveHost();
    if (call.ended) this.draining.set(id, call);
    else this.live.set(id, call);
    call.reattach(outlet, this, payload.seq, payload.credit);
    return call;
  }

  /**
   * §4.9: a token this server did not issue may name a call another server relayed and
   * lost (a fleet gateway's, docs/fleet.md): the stream is taken up from upstream and
   * relayed here. Until upstream has it, the call is an ordinary one, whose refusal its
   * caller hears as it is (NOT_FOUND for every mismatch, RSM-4); then it is resumable
   * here, with the same token, its output numbered on from `seq`.
   */
  private adopt(id: string, payload: ResumePayload, identity: Identity | null, outlet: CallOutlet): LiveCall | undefined {
    const registry = this.options.resume;
    const adopted = registry?.adopt?.(payload.token, identity);
    if (!registry || !adopted) return undefined;
    const window = this.options.rules.limits.maxBufferedBytesPerCall;
    const call = new LiveCall(id, adopted.op, window, outlet, this, payload.credit);
    this.place(call);
    call.openInput(window);
    let taken = false;
    const relay: ResumeRelay = {
      offer: () => false,
      onAcknowledged: (listener) => (call.onAcknowledged = listener),
      onForgotten: (listener) => (call.onForgotten = listener),
      resumed: (inputSeq) => {
        if (taken || call.ended) return;
        taken = true;
        registry.offer(call, identity, adopted.graceMs, this.options.unacknowledgedOutput, { token: payload.token, takenUpAfter: payload.seq });
        call.takenUp(inputSeq);
      },
    };
    const source = adopted.source;
    pumpStream(call, { ...adopted.op, handler: (_input, ctx) => source(payload.seq, ctx) }, null, this.context(call, identity, undefined, relay));
    return call;
  }

  /** The transport's channel is below its bound again (BP-4): paused pull sources resume. */
  drained(): void {
    if (this.waitingOnConnection.size === 0) return;
    const waiting = [...this.waitingOnConnection];
    this.waitingOnConnection.clear();
    for (const call of waiting) call.roomOnConnection();
  }

  /**
   * The connection is gone: every live call is cancelled (ABT-4), unless the connection
   * was `lost` (no clean close, §4.9): resumable calls then wait for their caller.
   */
  close(how: 'clean' | 'lost' = 'clean'): void {
    if (this.closed) return;
    this.closed = true;
    this.accepting = false;
    const registry = this.options.resume;
    const ended = [...this.draining.values(), ...this.retained.values()];
    this.draining.clear();
    this.retained.clear();
    for (const call of [...this.live.values()]) {
      if (how === 'lost' && call.resumable && registry) registry.detach(call);
      else {
        call.cancel();
        // Cancelled, it has nothing more to send: a resume must not find it (its record would outlive the call by its grace).
        if (call.resumable) registry?.forget(call);
      }
    }
    this.live.clear();
    for (const call of ended) {
      if (!call.resumable || !registry) continue;
      if (how === 'lost') registry.detach(call);
      else registry.forget(call);
    }
    this.waitingOnConnection.clear();
    this.options.onClose?.();
  }

  /** Graceful shutdown: refuse new calls, give live ones `graceMs` to end, then end the rest with UNAVAILABLE. */
  async shutdown(graceMs: number): Promise<void> {
    this.accepting = false;
    if (this.live.size > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, graceMs);
        this.idleWaiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    for (const call of [...this.live.values()]) call.terminate(RpcError.of('UNAVAILABLE', 'the server is shutting down'));
  }

  // CallHost --------------------------------------------------------------------

  get validateOutput(): boolean {
    return this.options.validateOutput;
  }

  get logger(): Logger {
    return this.options.logger;
  }

  get congested(): boolean {
    return this.options.congested?.() ?? false;
  }

  waitUncongested(call: LiveCall): void {
    this.waitingOnConnection.add(call);
  }

  ended(call: LiveCall): void {
    this.waitingOnConnection.delete(call);
    if (this.live.get(call.id) !== call) return;
    this.live.delete(call.id);
    // Its terminal frame is queued: only a call whose frames still wait for credit stays findable,
    // or a resumable one whose caller has not yet let it go.
    if (!call.settled && !this.closed) this.draining.set(call.id, call);
    else if (call.resumable && !this.closed) this.retained.set(call.id, call);
    if (call.resumable) this.options.resume?.keep(call);
    if (this.live.size === 0) {
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const wake of waiters) wake();
    }
  }

  settled(call: LiveCall): void {
    if (this.draining.get(call.id) !== call) return;
    this.draining.delete(call.id);
    if (!call.resumable || this.closed) return;
    this.retained.set(call.id, call);
    this.options.resume?.keep(call);
  }

  lost(error: unknown): void {
    this.options.logger.debug('send failed; closing the connection', { error: String(error) });
    this.close('lost');
  }

  discarded(call: LiveCall): void {
    if (this.retained.get(call.id) === call) this.retained.delete(call.id);
    if (this.draining.get(call.id) === call) this.draining.delete(call.id);
    this.options.resume?.forget(call);
  }

  handOver(call: LiveCall): void {
    this.waitingOnConnection.delete(call);
    for (const map of [this.live, this.draining, this.retained]) if (map.get(call.id) === call) map.delete(call.id);
  }
}
