import { RpcError, type ResumePayload } from '../protocol/index.js';
import { admit, callerIdentity, duplicateCallId, type AdmissionRules, type CallRequest } from './admission.js';
import { checkAccess } from './access.js';
import type { ParentCall } from './dispatcher.js';
import type { ObserveCalls, ObserveRefusals } from './call-observer.js';
import type { CallOutlet } from './call-outlet.js';
import { nextTurn, Wakeup } from '../flow/index.js';
import { AdmissionSlot } from './admission-slot.js';
import { type Identity, type Logger } from './identity.js';
import { LiveCallContext } from './call-context.js';
import type { CallHost } from './call-host.js';
import { LiveCall } from './live-call.js';
import { isUnary, type CallContext } from './operation.js';
import { pumpStream, pumpUnary } from './pump.js';
import type { ResumeRegistry } from './resume-registry.js';
import { adoptedResumption, offeredResumption, type SeamResumption } from './resume-seam.js';

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
  /** The connection's calls are made for this call of the same process (a fan-out's): observers are told its id, its resume is held to their checks. */
  readonly parent?: ParentCall;
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
  /** The calls on this connection: live ones, and ended ones whose frames still wait for credit (§4.8). */
  private readonly calls = new Map<string, LiveCall>();
  /** Pull sources paused because the whole connection, not their own call, is full. */
  private readonly waitingOnConnection = new Set<LiveCall>();
  private readonly idle = new Wakeup();
  private accepting = true;
  private shuttingDown = false;
  private closed = false;
  private callsStarted = 0;
  /** What observers are told of each call's parent, spread into what they are told. */
  private readonly parent: { readonly parentCallId?: string };
  /** The operations whose access check the parent's resume already holds. */
  private readonly accessRequired = new Set<string>();

  constructor(private readonly options: CallTableOptions) {
    this.parent = options.parent === undefined ? {} : { parentCallId: options.parent.callId };
  }

  get stats(): CallTableStats {
    return { liveCalls: this.liveCalls(), callsStarted: this.callsStarted };
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /**
   * Admits and starts a call, or returns the refusal its caller must hear (on the
   * outlet the transport chooses: a refusal of a duplicate id must not end the
   * stream the live call may be using).
   */
  start(request: CallRequest, connectionIdentity: Identity | null, outlet: CallOutlet): LiveCall | RpcError {
    const { id } = request;
    const limits = this.options.rules.limits;
    const byConnection = this.refusedByConnection(id);
    if (byConnection) return byConnection;
    // A call made for a parent is the caller's who holds the parent now (a resume's identity, once resumed).
    const identity = this.options.parent ? this.options.parent.heldBy() : connectionIdentity;
    const admitted = admit(this.options.rules, request, identity);
    if (admitted instanceof RpcError) return this.refused(request, identity, admitted);
    const { op } = admitted;
    this.holdParentTo(op.name, op.access);
    const window = limits.maxBufferedBytesPerCall;
    const call = new LiveCall(id, op, window, outlet, this, request.payload.credit, this.options, new AdmissionSlot(admitted.release), this.options.rules.outbound.account(admitted.identity));
    // An observer's `end` may come from inside its own hooks: the call ends in a later turn, not under them.
    const end = (error: RpcError): void => nextTurn(() => call.terminate(error));
    call.observer = this.options.observe?.({ id, operation: op, identity: admitted.identity, input: admitted.input, requestBytes: request.sizeBytes, ...this.parent, end });
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
    const unacknowledged = this.options.unacknowledgedOutput ?? false;
    let resumption: SeamResumption | undefined;
    if (!isUnary(op) && op.resumeSeam) {
      // Resumable with the token upstream chooses, known once upstream admits the call: until then its caller hears nothing (RSM-1).
      call.openInput(window);
      const keep = registry && ((token: string) => registry.offer(call, admitted.identity, asked!, unacknowledged, token));
      resumption = offeredResumption(call, window, keep, !unacknowledged);
    } else {
      registry?.offer(call, admitted.identity, asked!, unacknowledged);
      // An input stream's first grant, or a 0 grant to a stream that asked for credit, says the call is admitted.
      call.announce(window);
    }
    const ctx = this.context(call, admitted.identity, deadlineAt, resumption);
    if (isUnary(op)) pumpUnary(call, op, admitted.input, ctx);
    else pumpStream(call, op, admitted.input, ctx);
    return call;
  }

  /** A new call in this table under `id` (ID-3: an ended one its caller let go of is forgotten). */
  private place(call: LiveCall): void {
    this.calls.set(call.id, call);
    const previous = this.options.resume?.heldOn(this, call.id);
    if (previous) this.options.resume?.forget(previous); // ID-3: its caller reuses the id, so it has it all
    this.callsStarted++;
  }

  private liveCalls(): number {
    let n = 0;
    for (const call of this.calls.values()) if (!call.ended) n++;
    return n;
  }

  private context(call: LiveCall, identity: Identity | null, deadlineAt: number | undefined, resumption: SeamResumption | undefined): CallContext {
    return new LiveCallContext(call, this.options.logger, identity, deadlineAt, resumption, this.options.parent?.requireOnResume);
  }

  /** RSM-9 for a parent: whoever resumes it must hold the access of every operation it called, as its start did. */
  private holdParentTo(operation: string, access: Parameters<typeof checkAccess>[0]): void {
    const requireOnResume = this.options.parent?.requireOnResume;
    if (!requireOnResume || this.accessRequired.has(operation)) return;
    this.accessRequired.add(operation);
    requireOnResume((identity) => checkAccess(access, identity));
  }

  private refused(request: CallRequest, identity: Identity | null, error: RpcError): RpcError {
    const token = request.payload.auth_token;
    const tokenIdentity = token === undefined ? undefined : this.options.rules.authenticate?.(token);
    this.options.observeRefusals?.({ id: request.id, operationId: request.payload.operationId, identity: tokenIdentity ?? identity, requestBytes: request.sizeBytes, ...this.parent, error });
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
    const named = this.calls.get(id);
    if (named && !named.ended) return duplicateCallId(id);
    if (this.closed || !this.accepting || !this.options.accepting()) return RpcError.of('UNAVAILABLE', 'the server is shutting down');
    const inFlight = this.calls.size - (named ? 1 : 0);
    if (inFlight >= maxCallsInFlight) {
      return RpcError.of('LIMIT_EXCEEDED', `at most ${maxCallsInFlight} calls may be in flight on one connection, those whose output waits for credit included`);
    }
    return undefined;
  }

  /** The live call with this id. */
  get(id: string): LiveCall | undefined {
    const call = this.calls.get(id);
    return call && !call.ended ? call : undefined;
  }

  /** The live call with this id, or the ended one whose frames still wait for credit or for its caller's release (§4.9). */
  find(id: string): LiveCall | undefined {
    return this.calls.get(id) ?? this.options.resume?.heldOn(this, id);
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
    const attempt = { token: payload.token, id, identity, after: payload.seq };
    const call = registry.claim(payload.token, id, identity);
    if (call instanceof RpcError) {
      // A token this server holds, refused for the asker's access (RSM-9), is answered as it is: it names no other server's call.
      const adopted = call.code === 'NOT_FOUND' ? this.takeUpThroughSeam(id, payload, identity, outlet, registry) : undefined;
      registry.attempted(adopted ? { ...attempt, operation: adopted.op.name } : { ...attempt, error: call });
      return adopted ?? call;
    }
    const operation = call.op.name;
    const refused = registry.takeUp(call, payload.seq, () => {
      this.calls.set(id, call);
      call.moveTo(this, outlet, payload.credit);
    });
    registry.attempted({ ...attempt, operation, ...(refused ? { error: refused } : {}) });
    return refused ?? call;
  }

  /** §4.9: a token this server did not issue is offered to the seam (ResumeSeam), which may take the call up from upstream. */
  private takeUpThroughSeam(id: string, payload: ResumePayload, identity: Identity | null, outlet: CallOutlet, registry: ResumeRegistry): LiveCall | undefined {
    const seam = registry.seam;
    const stream = seam?.adopt(payload.token, identity);
    const op = stream && this.options.rules.registry.lookup(stream.operation);
    if (!stream || !op || isUnary(op) || op.resumeSeam !== seam) return undefined;
    const window = this.options.rules.limits.maxBufferedBytesPerCall;
    const call = new LiveCall(id, op, window, outlet, this, payload.credit, this.options, AdmissionSlot.none(), this.options.rules.outbound.account(identity));
    this.place(call);
    call.openInput(window);
    // Its caller hears `call.resumed` once upstream has the call, not an admission.
    call.announce();
    const keep = (): ReturnType<ResumeRegistry['keep']> => registry.keep(call, identity, stream.graceMs, this.options.unacknowledgedOutput ?? false, payload.token);
    const resumption = adoptedResumption(call, payload.seq, keep);
    pumpStream(call, { ...op, handler: (_input, ctx) => stream.source(payload.seq, ctx) }, null, this.context(call, identity, undefined, resumption));
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
    const calls = [...this.calls.values()];
    this.calls.clear();
    for (const call of calls) {
      if (how === 'lost' && call.resumable && registry) registry.detach(call);
      else if (!call.ended) {
        call.cancel();
        // Cancelled, it has nothing more to send: a resume must not find it (its record would outlive the call by its grace).
        if (call.resumable) registry?.forget(call);
      } else if (call.resumable) registry?.forget(call);
    }
    registry?.release(this, how);
    this.waitingOnConnection.clear();
    this.options.onClose?.();
  }

  /**
   * Graceful shutdown: refuse new calls, give live ones `graceMs` to end, then end the rest
   * with UNAVAILABLE. Called again while the first waits (a second Ctrl-C), the grace ends now.
   */
  async shutdown(graceMs: number): Promise<void> {
    if (this.shuttingDown) return this.idle.wake();
    this.shuttingDown = true;
    this.accepting = false;
    if (this.liveCalls() > 0) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([this.idle.wait(), new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)))]);
      clearTimeout(timer);
    }
    for (const call of [...this.calls.values()]) if (!call.ended) call.terminate(RpcError.of('UNAVAILABLE', 'the server is shutting down'));
  }

  // CallHost --------------------------------------------------------------------

  get congested(): boolean {
    return this.options.congested?.() ?? false;
  }

  waitUncongested(call: LiveCall): void {
    this.waitingOnConnection.add(call);
  }

  ended(call: LiveCall): void {
    this.waitingOnConnection.delete(call);
    if (this.idle.waiting && this.liveCalls() === 0) this.idle.wake();
    this.settled(call);
  }

  /**
   * The ended call stays here while its frames wait for credit; once it has sent them, a
   * resumable one whose caller has not yet let it go is the registry's to keep.
   */
  settled(call: LiveCall): void {
    if (this.calls.get(call.id) !== call || (!call.settled && !this.closed)) return;
    this.calls.delete(call.id);
    if (call.resumable) this.options.resume?.ended(call, this.closed ? undefined : this);
  }

  lost(error: unknown): void {
    this.options.logger.debug('send failed; closing the connection', { error: String(error) });
    this.close('lost');
  }

  discarded(call: LiveCall): void {
    if (this.calls.get(call.id) === call) this.calls.delete(call.id);
  }

  handOver(call: LiveCall): void {
    this.waitingOnConnection.delete(call);
    if (this.calls.get(call.id) === call) this.calls.delete(call.id);
  }
}
