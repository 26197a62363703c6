import type { CommandEnd } from '../contracts/index.js';
import { RpcError } from '../protocol/index.js';
import { resultRecord, errorFields, type ResultRecord } from './result-record.js';
import { classify, type Classified } from './outcome.js';


/** The output, when the caller captured it for the result record (the CLI's `--json`). */
export interface ExecCapture {
  readonly stdout: string;
  readonly stderr: string;
  readonly encoding: 'utf8' | 'base64';
  readonly truncated: boolean;
}

/**
 * The exit code of a process that reports a command's code (docs/cli.md "Exit codes"):
 * its low 8 bits, all a process exit status holds, so `docker exec` itself exits 44
 * for an engine's 300 and 255 for -1. A code that is not 0 never becomes 0 (256 exits
 * 1): a command that failed is never read as a success.
 */
export function execExitCode(code: number): number {
  const low = code & 0xff;
  return low === 0 && code !== 0 ? 1 : low;
}

/**
 * How an exec that ran to its terminal frame ended: its command's exit code decides,
 * 0 a success and anything else the operation's failure (docs/cli.md "Exit codes").
 */
export function execEnded(exitCode: number): Classified {
  return exitCode === 0 ? { outcome: 'success', boundary: 'none' } : { outcome: 'operation_failure', boundary: 'execution' };
}

/**
 * The result record of one exec, the one home of its rules for the CLI (its `--json` line
 * and its own exit code), HTTP and the Lab. A failure decides the outcome and the
 * exit code; without one the terminal frame does, its code as `execExitCode` makes it;
 * without either the exit code is unknown, which is a failure, never 0 (EXEC-4).
 * `exec.exit_code` keeps the command's code as the engine reported it.
 */
export function execResultRecord(run: {
  readonly operation: string;
  readonly call_id: string | null;
  readonly events_seen: number;
  /** What the terminal frame reported (spec/PROTOCOL.md EXEC-1): the operation's `commandEnd`. */
  readonly end: CommandEnd | undefined;
  readonly failure?: { readonly classified: Classified; readonly error: unknown } | undefined;
  readonly capture?: ExecCapture | undefined;
}): ResultRecord {
  const { operation, call_id, events_seen, end, capture } = run;
  const exec: NonNullable<ResultRecord['exec']> = {
    exit_code: end?.exitCode ?? null,
    stdout_bytes: end?.stdoutBytes ?? 0,
    stderr_bytes: end?.stderrBytes ?? 0,
    ...(capture ? { stdout: capture.stdout, stderr: capture.stderr } : {}),
    encoding: capture?.encoding ?? 'utf8',
    truncated: capture?.truncated ?? false,
  };
  const failure = run.failure ?? (end ? undefined : unended());
  if (failure) {
    const { outcome, boundary } = failure.classified;
    return resultRecord({ command: 'exec', operation, call_id, events_seen, outcome, failure_boundary: boundary, exec, ...errorFields(failure.error, outcome) });
  }
  const ended = execEnded(end!.exitCode);
  return resultRecord({ command: 'exec', operation, call_id, events_seen, outcome: ended.outcome, failure_boundary: ended.boundary, exit_code: execExitCode(end!.exitCode), exec });
}

function unended(): { classified: Classified; error: unknown } {
  const error = new RpcError('INTERNAL', 'the exec stream ended without a terminal frame; the exit code is unknown');
  return { classified: classify(error), error };
}
