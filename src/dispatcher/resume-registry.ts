import { RpcError, toBase64 } from '../protocol/index.js';
import { checkResumeAccess } from './access.js';
import type { Identity, Logger } from './identity.js';
import type { SessionLimits } from './limits.js';
import type { CallHost, LiveCall } from './live-call.js';
import type { AdoptResume } from './operation.js';
import { ReplayBudget } from './replay-budget.js';
import { ReplayLog } from './replay-log.js';

/** How a call becomes resumable when it does not simply get a token of this server's own. */
export interface OfferOptions {
  /** The token, when the call's operation chose it (a relay's, §4.9): it must hold at least 128 random bits. */
  readonly token?: string;
  /** A call taken up from another server: its output is numbered on from this, and its caller hears `call.resumed`, not `call.resumable`. */
  readonly takenUpAfter?: number;
}

interface ResumeRecord {
  readonly token: string;
  readonly call: LiveCall;
  /** The identity the call belongs to; only it may resume the call. */
  readonly subject: string | null;
  readonly graceMs: number;
  timer: ReturnType<typeof setTimeout> | undefined;
  /** Gives back the call's place under its identity's caps (LIM-3), once the record goes. */
  readonly release: (() => void) | undefined;
}

/** One answer for every refused resume: whether the call exists is not revealed (§4.9, RSM-4). */
const NO_SUCH_CALL = 'no resumable call for this token and id (its grace may have passed, or the server restarted)';

/**
 * The server's resumable calls (spec/PROTOCOL.md §4.9), over every connection: their
 * tokens, the grace each waits for its caller when its connection is lost, and the
 * replay budget they share. While a call has no connection this is its host: it runs
 * on, its output kept, until a caller resumes it or its grace ends and it is cancelled.
 */
export class ResumeRegistry implements CallHost {
  readonly budget: ReplayBudget;
  private readonly byToken = new Map<string, ResumeRecord>();
  private readonly byCall = new Map<LiveCall, ResumeRecord>();

  constructor(
    private readonly limits: SessionLimits,
    readonly logger: Logger,
    readonly validateOutput: boolean,
    /** Finds what a token this server did not issue names (a fleet gateway's, docs/fleet.md). */
    readonly adopt?: AdoptResume,
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
    for (const record of this.byToken.values()) if (!record.call.isAttached) n++;
    return n;
  }

  /**
   * Makes `call` resumable for the grace its caller asked, capped at `maxResumeMs` (RSM-1).
   * `unacknowledged`: its caller never acknowledges output (plain HTTP, §5.6): its log slides.
   */
  offer(call: LiveCall, identity: Identity | null, askedMs: number, unacknowledged = false, options: OfferOptions = {}): void {
    const graceMs = Math.min(askedMs, this.limits.maxResumeMs);
    const token = options.token ?? newToken();
    const subject = identity?.subject ?? null;
    // LIM-3: a kept call holds its identity's place until it is forgotten, ended or not, so the
    // calls a caller never lets go are bounded as live ones are.
    const record: ResumeRecord = { token, call, subject, graceMs, timer: undefined, release: call.releaseAdmission };
    call.releaseAdmission = undefined;
    this.byToken.set(token, record);
    this.byCall.set(call, record);
    const log = new ReplayLog(this.limits.maxReplayBytesPerCall, this.budget, subject, unacknowledged);
    if (options.takenUpAfter !== undefined) log.continueAfter(options.takenUpAfter);
    call.makeResumable(log, token, graceMs, options.takenUpAfter === undefined);
  }

  /** Its connection is lost: the call waits for its caller for its grace, then is cancelled (RSM-6). */
  detach(call: LiveCall): void {
    const record = this.byCall.get(call);
    if (!record) return call.cancel();
    call.detach(this);
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
    return record.call;
  }

  /**
   * An ended call is kept for its grace, for a caller that may not have its terminal event yet (RSM-8).
   * The grace runs once that event has gone, or the connection has: a caller still reading its tail, however slowly, gets it all.
   */
  keep(call: LiveCall): void {
    const record = this.byCall.get(call);
    if (record && record.timer === undefined && (call.settled || !call.isAttached)) this.arm(record);
  }

  /** The call's record goes: its token dies and its replay's bytes go back. */
  forget(call: LiveCall): void {
    const record = this.byCall.get(call);
    if (!record) return;
    clearTimeout(record.timer);
    this.byToken.delete(record.token);
    this.byCall.delete(call);
    call.forgetReplay();
    record.release?.();
  }

  /** The server stops: every kept call is cancelled, its process killed. */
  close(): void {
    for (const record of [...this.byToken.values()]) {
      this.forget(record.call);
      if (!record.call.ended) record.call.cancel();
    }
  }

  // CallHost, for calls without a connection ---------------------------------

  readonly congested = false;

  waitUncongested(): void {}

  ended(call: LiveCall): void {
    // Cancelled (its grace ended): nothing is left to deliver. Otherwise its tail waits for a resume.
    if (call.settled) this.forget(call);
  }

  settled(): void {}

  lost(): void {}

  discarded(call: LiveCall): void {
    this.forget(call);
  }

  handOver(): void {}

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
