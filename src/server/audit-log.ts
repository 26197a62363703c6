import { performance } from 'node:perf_hooks';
import type { CallOutcome, CopyEnd, ObserveCalls, ObservedCall, ObserveRefusals, ObserveResumes, Operation } from '../dispatcher/index.js';
import type { LineSink } from './audit-file.js';

/**
 * One line of the audit log (docs/security.md "Audit log"): who called what, on
 * which container, with which command, and how it ended. Never a token, never an
 * environment variable's value: an exec's `env` is logged by its names only.
 */
export interface AuditRecord {
  /** When the call was admitted (or refused), ISO 8601. */
  readonly time: string;
  readonly call_id: string;
  /** The call this one was made for (a fan-out's `docker/container/exec-many`, for each of its targets' execs). */
  readonly parent_call_id?: string;
  /** The caller's identity; null when anonymous. */
  readonly subject: string | null;
  /** The operation; for a resume whose token names no call here, empty. */
  readonly operation: string;
  /**
   * A line for a resume of a kept call (§4.9), not for a call: the output item the caller
   * had (`end`: it let the call go, HTTP-11). Its `call_id` is the call resumed, `subject`
   * who asked, `outcome` `resumed` or `refused` (with the code).
   */
  readonly resume?: { readonly after: number | 'end' };
  /** The container as the caller named it, for operations on one. */
  readonly container?: string;
  /** On a fleet gateway: the host the call was sent to (a bare name resolved, or the one named). */
  readonly host?: string;
  /** An exec's command, as given. */
  readonly cmd?: readonly string[];
  /** A fan-out's selection, as given (`docker/container/exec-many`); each of its targets' execs is a line of its own. */
  readonly selection?: { readonly labels?: readonly string[]; readonly targets?: readonly string[] };
  /** The names of the variables an exec set; their values are never logged. */
  readonly env_names?: readonly string[];
  readonly tty?: boolean;
  readonly outcome: 'completed' | 'error' | 'cancelled' | 'refused' | 'resumed';
  /** The error's code (its message may quote the caller's input, so it is left out). */
  readonly error_code?: string;
  /** The command's own exit code, for operations that run one and reported its end. */
  readonly exit_code?: number | null;
  /** A copy's direction, out of the container or in (spec §12, ARC-7). */
  readonly direction?: 'out' | 'in';
  /** A copy's path in the container, as given. */
  readonly path?: string;
  /** The tar bytes a copy carried and their SHA-256, as its terminal frame said; absent when it did not reach it. */
  readonly tar_bytes?: number;
  readonly sha256?: string;
  /** The request as it arrived plus every input item. */
  readonly bytes_in: number;
  /** Every output, as encoded for the caller. */
  readonly bytes_out: number;
  readonly duration_ms: number;
  /** A token refused before any call (an HTTP request's or WebSocket upgrade's): the transport; the line has no call id. */
  readonly transport?: 'websocket' | 'http';
}

const MAX_OPERATION_CHARS = 200;

/** Writes one audit line for every call: `observe` for admitted calls, `observeRefusals` for refused ones; and one for every resume. */
export function auditLog(out: LineSink): { observe: ObserveCalls; observeRefusals: ObserveRefusals; observeResumes: ObserveResumes } {
  const write = (record: AuditRecord): void => void out.write(`${JSON.stringify(record)}\n`);
  return {
    observe(call) {
      const time = new Date().toISOString();
      const started = performance.now();
      const described = describeCall(call);
      const commandEnd = call.operation.commandEnd;
      const copy = call.operation.copy;
      let copied: CopyEnd | undefined;
      let bytesIn = call.requestBytes;
      let bytesOut = 0;
      let exitCode: number | null = null;
      let host: string | undefined;
      return {
        routed(to) {
          host = to;
        },
        input(_item, bytes) {
          bytesIn += bytes;
        },
        output(output, bytes) {
          bytesOut += bytes;
          const end = commandEnd?.(output);
          if (end) exitCode = end.exitCode;
          copied = copy?.end(output) ?? copied;
        },
        ended(outcome) {
          write({
            time,
            call_id: call.id,
            ...parentOf(call),
            subject: call.identity?.subject ?? null,
            operation: call.operation.name,
            ...described,
            ...(host === undefined ? {} : { host }),
            ...outcomeFields(outcome),
            ...(commandEnd ? { exit_code: exitCode } : {}),
            ...(copied ? { tar_bytes: copied.bytes, sha256: copied.sha256 } : {}),
            bytes_in: bytesIn,
            bytes_out: bytesOut,
            duration_ms: Math.round(performance.now() - started),
          });
        },
      };
    },
    observeRefusals(call) {
      write({
        time: new Date().toISOString(),
        call_id: call.id,
        ...parentOf(call),
        subject: call.identity?.subject ?? null,
        operation: call.operationId.length > MAX_OPERATION_CHARS ? `${call.operationId.slice(0, MAX_OPERATION_CHARS)}…` : call.operationId,
        outcome: 'refused',
        error_code: call.error.code,
        bytes_in: call.requestBytes,
        bytes_out: 0,
        duration_ms: 0,
        ...(call.transport ? { transport: call.transport } : {}),
      });
    },
    observeResumes(resume) {
      write({
        time: new Date().toISOString(),
        call_id: resume.id,
        subject: resume.identity?.subject ?? null,
        operation: resume.operation ?? '',
        resume: { after: resume.after },
        ...(resume.error ? { outcome: 'refused', error_code: resume.error.code } : { outcome: 'resumed' }),
        bytes_in: 0,
        bytes_out: 0,
        duration_ms: 0,
      });
    },
  };
}

function parentOf(call: { readonly parentCallId?: string }): Pick<AuditRecord, 'parent_call_id'> {
  return call.parentCallId === undefined ? {} : { parent_call_id: call.parentCallId };
}

function outcomeFields(outcome: CallOutcome): Pick<AuditRecord, 'outcome' | 'error_code'> {
  return outcome.kind === 'error' ? { outcome: 'error', error_code: outcome.error.code } : { outcome: outcome.kind };
}

/** What the input says about the call's container and command: read by the operation's contract, by no operation's name. */
function describeCall(call: ObservedCall): Pick<AuditRecord, 'container' | 'cmd' | 'selection' | 'env_names' | 'tty' | 'direction' | 'path'> {
  const input = call.input;
  if (typeof input !== 'object' || input === null) return {};
  const fields = input as Record<string, unknown>;
  const container = containerOf(call.operation, fields);
  const copy = call.operation.copy;
  if (copy !== undefined) {
    const path = typeof fields['path'] === 'string' ? fields['path'] : undefined;
    return { ...(container === undefined ? {} : { container }), direction: copy.direction, ...(path === undefined ? {} : { path }) };
  }
  if (call.operation.commandEnd === undefined) return container === undefined ? {} : { container };
  const { cmd, env, tty, labels, targets } = fields;
  const selection = { ...(isStrings(labels) ? { labels } : {}), ...(isStrings(targets) ? { targets } : {}) };
  return {
    ...(container === undefined ? {} : { container }),
    ...(Object.keys(selection).length > 0 ? { selection } : {}),
    ...(isStrings(cmd) ? { cmd } : {}),
    ...(isStrings(env) ? { env_names: env.map((entry) => entry.slice(0, Math.max(0, entry.indexOf('=')))) } : {}),
    tty: typeof tty === 'object' && tty !== null,
  };
}

function containerOf(op: Operation, input: Record<string, unknown>): string | undefined {
  const path = op.access?.resourceIdPath;
  if (op.access?.resourceType !== 'container' || path === undefined) return undefined;
  const id = input[path];
  return typeof id === 'string' ? id : undefined;
}

function isStrings(value: unknown): value is readonly string[] {
  return Array.isArray(value) && value.every((entry) => typeof entry === 'string');
}
