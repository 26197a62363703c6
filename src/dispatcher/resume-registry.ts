import { RpcError, toBase64 } from '../protocol/index.js';
import { checkResumeAccess } from './access.js';
import type { AdmissionSlot } from './admission-slot.js';
import type { ObserveResumes, ResumeAttempt } from './call-observer.js';
import type { Identity, Logger } from './identity.js';
import type { DispatcherLimits } from './limits.js';
import type { LiveCall } from './live-call.js';
import { ReplayBudget } from './replay-budget.js';
import { ReplayLog } from './replay-log.js';
import { ResumableOutput } from './resumable-output.js';
import type { ResumeSeam } from './resume-seam.js';

interface ResumeRecord {
  readonly token: string;
  readonly call: LiveCall;
  readonly output: ResumableOutput;
  /** The identity the call belongs to; only it may resume the call. */
  readonly subject: string | null;
  readonly graceMs: number;
  timer: ReturnType<typeof setTimeout> | undefined;
  /** The call's place under its identity's caps (LIM-3), given back once the record goes. */
  readonly admission: AdmissionSlot;
  /** The connection an ended call that sent everything is still on, for its caller to let go of it there. */
  heldBy: object | undefined;
}

/** One answer for every refused resume: whether the call exists is not revealed (§4.9, RSM-4). */
const NO_SUCH_CALL = 'no resumable call for this token and id (its grace may have passed, or the server restarted)';

/**
 * The server's resumable calls (spec/PROTOCOL.md §4.9), over every connection: their
 * tokens, the grace each waits for its caller when its connection is lost, and the
 * replay budget they share. It is the one owner of a call that has no connection (it
 * runs on, its output kept, until a caller resumes it or its grace ends and it is
 * cancelled), and of an ended one that sent everything, until its caller lets it go.
 */
export class ResumeRegistry {
  readonly budget: ReplayBudget;
  private readonly byToken = new Map<string, ResumeRecord>();
  private readonly byCall = new Map<LiveCall, ResumeRecord>();
  private readonly held = new Map<object, Map<string, ResumeRecord>>();

  constructor(
    private readonly limits: DispatcherLimits,
    readonly logger: Logger,
    /** Where a token this server did not issue may be taken up (a fleet gateway's, docs/fleet.md). */
    readonly seam?: ResumeSeam,
    /** Told of every resume, taken or refused (the audit log). */
    private readonly observe?: ObserveResumes,
  ) {
    this.budget = new ReplayBudget(limits.maxReplayBytesPerIdentity, limits.maxReplayBytes);
  }

  /** The longest a call is kept for its caller (`maxResumeMs`). */
  get maxGraceMs(): number {
    return this.limits.maxResumeMs;
  }

  /** Whether this server keeps calls past their connection at all (`maxResumeMs` > 0). */
  get enabled(): boolean {
    return this.limits.maxResumeMs > 0;
  }

  /** Resumable calls kept, attached or not. */
  get size(): number {
    return this.byToken.size;
  }

  /** Calls without a connection, waiting for their caller. */
  get detached(): number {
    let n = 0;
    for (const record of this.byToken.values()) if (!record.output.isAttached) n++;
    return n;
  }

  /**
   * Makes `call` resumable for the grace its caller asked, capped at `maxResumeMs` (RSM-1),
   * and tells its caller the token first. `unacknowledged`: its caller never acknowledges
   * output (plain HTTP, §5.6): its log slides. `token`: one a seam chose upstream, which
   * must hold at least 128 random bits.
   */
  offer(call: LiveCall, identity: Identity | null, askedMs: number, unacknowledged = false, token = newToken()): ResumableOutput {
    const output = this.keep(call, identity, askedMs, unacknowledged, token);
    output.control({ type: 'resumable', token, graceMs: this.byCall.get(call)!.graceMs });
    return output;
  }

  /**
   * Makes `call` resumable as `token` without a word to its caller: one taken up through a
   * seam, whose caller hears `call.resumed` instead. LIM-3: a kept call holds its identity's
   * place until it is forgotten, ended or not, so the calls a caller never lets go are
   * bounded as live ones are.
   */
  keep(call: LiveCall, identity: Identity | null, graceMs: number, unacknowledged: boolean, token: string): ResumableOutput {
    const subject = identity?.subject ?? null;
    const log = new ReplayLog(this.limits.maxReplayBytesPerCall, this.budget, subject, unacknowledged);
    let output: ResumableOutput | undefined;
    call.wrapOutput((inner) => (output = new ResumableOutput(inner, log, call, () => this.forget(call))));
    const record: ResumeRecord = {
      token,
      call,
      output: output!,
      subject,
      graceMs: Math.min(graceMs, this.limits.maxResumeMs),
      timer: undefined,
      admission: call.handOverAdmission(),
      heldBy: undefined,
    };
    this.byToken.set(token, record);
    this.byCall.set(call, record);
    return record.output;
  }

  /** Its connection is lost: the call waits for its caller for its grace, then is cancelled (RSM-6). */
  detach(call: LiveCall): void {
    const record = this.byCall.get(call);
    if (!record) return call.cancel();
    this.unhold(record);
    record.output.detach();
    call.moveTo(undefined);
    this.arm(record);
  }

  /**
   * The call `token` names, unchecked: for a transport whose callers name a call by its
   * token alone (plain HTTP, §5.6). It must still resume it through `claim`, which checks
   * the identity: what this returns is never shown to the caller.
   */
  named(token: string): LiveCall | undefined {
    return this.byToken.get(token)?.call;
  }

  /**
   * The call `token` names, for a caller of `identity` resuming it as `id`; the same refusal for
   * every mismatch (RSM-4). Its own identity must still pass the access check the call's start
   * passed (RSM-9): refused, it hears why (FORBIDDEN), and the call is not touched.
   */
  claim(token: string, id: string, identity: Identity | null): LiveCall | RpcError {
    const record = this.byToken.get(token);
    if (!record || record.call.id !== id || record.subject !== (identity?.subject ?? null)) return RpcError.of('NOT_FOUND', NO_SUCH_CALL);
    const denied = checkResumeAccess(record.call.op, record.call.identityChecks, identity);
    if (denied) return denied;
    clearTimeout(record.timer);
    record.timer = undefined;
    record.call.resumedBy = { identity };
    return record.call;
  }

  /**
   * A resume was taken or refused, by whoever called `claim` for it once the answer is
   * final: the observer (the audit log) hears who asked, for which call, and how it ended.
   * The token is never passed on; the operation is named when the token names that call.
   */
  attempted(attempt: Omit<ResumeAttempt, 'operation'> & { readonly token: string; readonly operation?: string }): void {
    if (!this.observe) return;
    const { token, ...seen } = attempt;
    const record = this.byToken.get(token);
    const operation = attempt.operation ?? (record?.call.id === attempt.id ? record.call.op.name : undefined);
    try {
      this.observe({ ...seen, ...(operation === undefined ? {} : { operation }) });
    } catch (error) {
      this.logger.warn('a resume observer failed', { error: String(error) });
    }
  }

  /**
   * A claimed call is taken up after output `seq`: `move` puts it on its new connection, which
   * then hears what it lacks. Never a silent gap (§4.9): a caller that can no longer have what
   * follows its position loses the call.
   */
  takeUp(call: LiveCall, seq: number, move: () => void): RpcError | undefined {
    const record = this.byCall.get(call);
    if (!record || !record.output.replaysAfter(seq)) {
      this.forget(call);
      call.cancel();
      return new RpcError('UNAVAILABLE', `the output after item ${seq} is no longer kept; the call was ended`, { retryable: false });
    }
    call.leaveHost();
    this.unhold(record);
    record.output.reattach(seq, move);
    return undefined;
  }

  /**
   * An ended call is kept for its grace, for a caller that may not have its terminal event yet (RSM-8).
   * The grace runs once that event has gone, or the connection has: a caller still reading its tail,
   * however slowly, gets it all. One that sent everything stays findable on `holder`, its connection.
   */
  ended(call: LiveCall, holder: object | undefined): void {
    const record = this.byCall.get(call);
    if (!record) return;
    if (call.settled && holder !== undefined && record.heldBy === undefined) {
      record.heldBy = holder;
      let calls = this.held.get(holder);
      if (!calls) this.held.set(holder, (calls = new Map()));
      calls.set(call.id, record);
    }
    if (record.timer === undefined && (call.settled || !record.output.isAttached)) this.arm(record);
  }

  /** The ended call `id` that `holder`'s caller has not let go of. */
  heldOn(holder: object, id: string): LiveCall | undefined {
    return this.held.get(holder)?.get(id)?.call;
  }

  /** The connection `holder` is gone: calls still held on it wait for a resume (`lost`), or are let go. */
  release(holder: object, how: 'clean' | 'lost'): void {
    const calls = this.held.get(holder);
    if (!calls) return;
    for (const record of [...calls.values()]) {
      if (how === 'lost') this.detach(record.call);
      else this.forget(record.call);
    }
    this.held.delete(holder);
  }

  /** The call's record goes: its token dies and its replay's bytes go back. */
  forget(call: LiveCall): void {
    const record = this.byCall.get(call);
    if (!record) return;
    clearTimeout(record.timer);
    this.byToken.delete(record.token);
    this.byCall.delete(call);
    this.unhold(record);
    record.output.forget();
    record.admission.release();
  }

  /** The server stops: every kept call is cancelled, its process killed. */
  close(): void {
    for (const record of [...this.byToken.values()]) {
      this.forget(record.call);
      if (!record.call.ended) record.call.cancel();
    }
  }

  private unhold(record: ResumeRecord): void {
    if (record.heldBy === undefined) return;
    const calls = this.held.get(record.heldBy);
    calls?.delete(record.call.id);
    if (calls?.size === 0) this.held.delete(record.heldBy);
    record.heldBy = undefined;
  }

  private arm(record: ResumeRecord): void {
    clearTimeout(record.timer);
    record.timer = setTimeout(() => this.expire(record), record.graceMs);
    record.timer.unref?.();
  }

  private expire(record: ResumeRecord): void {
    this.logger.info('a resumable call was not resumed within its grace', { callId: record.call.id, graceMs: record.graceMs });
    this.forget(record.call);
    record.call.cancel();
  }
}

/** 144 random bits, URL-safe. */
function newToken(): string {
  return toBase64(crypto.getRandomValues(new Uint8Array(18))).replace(/\+/g, '-').replace(/\//g, '_');
}
