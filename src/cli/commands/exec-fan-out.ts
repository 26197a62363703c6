import { RpcError, execMany, exitCodeOf, selectTargetsFrom, summaryOf, type Client, type TargetResult, type TargetSelection } from '../../client/index.js';
import { classify, execResultRecord, fanOutSummaryRecord, outcomes, type Classified, type ResultRecord } from '../../outcome/index.js';
import { connectFrom, parseCount, parseDuration, toJsonLine, writeErr, type GlobalFlags } from '../context.js';
import { announceReconnects, resumeOf } from '../resume.js';
import { signalController } from '../signals.js';
import { escapeControls } from '../cp/names.js';
import { captureLimitBytes, formatGroups, groupOutputs, TargetLines, type Captured } from '../fan-out-output.js';
import { TurnWriter } from '../fan-out-turns.js';

/** The flags of `callwire exec` that a fan-out reads. */
export interface FanOutFlags {
  label: string[];
  targets?: string;
  anyOwner?: boolean;
  dryRun?: boolean;
  parallel?: string;
  maxTargets: string;
  group?: boolean;
  env: string[];
  workdir?: string;
  user?: string;
  binary?: boolean;
  interactive?: boolean;
  resume?: string | boolean;
}

/** Above this many targets the CLI refuses to run unless `--max-targets` says more (docs/security.md "Fan-out"). */
export const DEFAULT_MAX_TARGETS = 1000;

export function selectionOf(opts: Pick<FanOutFlags, 'label' | 'targets' | 'anyOwner'>): TargetSelection | undefined {
  const patterns = opts.targets === undefined ? [] : opts.targets.split(',').map((p) => p.trim()).filter((p) => p.length > 0);
  if (opts.label.length === 0 && opts.targets === undefined) return undefined;
  return { labels: opts.label, patterns, ...(opts.anyOwner ? { anyOwner: true } : {}) };
}

/** A line for people on stderr: what a server, a host or a target wrote in it cannot drive the terminal (docs/security.md "Fan-out"). */
function say(line: string): void {
  writeErr(escapeControls(line));
}

/** An error before any target ran: our own exit code and one line. */
class Refusal extends Error {
  constructor(
    message: string,
    readonly classified: Classified,
  ) {
    super(message);
  }
}

/**
 * `callwire exec -l … / --targets …`: the command in every selected container, output
 * streamed line by line with its target (or grouped, or one record per target), our exit
 * code the largest of theirs (pdsh -S). `single` runs a lone target with a terminal (`-t`).
 */
export async function runFanOut(selection: TargetSelection, cmd: readonly string[], opts: FanOutFlags, flags: GlobalFlags, tty: boolean, single: (target: string) => Promise<void>): Promise<void> {
  const stop = signalController();
  let client: Client | undefined;
  try {
    const parallel = opts.parallel === undefined ? undefined : parseCount(opts.parallel, '--parallel');
    const maxTargets = parseCount(opts.maxTargets, '--max-targets');
    const timeoutMs = flags.timeout ? parseDuration(flags.timeout, '--timeout') : undefined;
    const resume = resumeOf(opts.resume);
    if (opts.group && flags.json) throw new Refusal('--group and --json are two ways to print the same output: choose one', refused('invalid_input'));
    if (cmd.length === 0 && !opts.dryRun) throw new Refusal('no command: with -l or --targets every argument after the options is the command', refused('invalid_input'));
    client = await connectFrom(flags, stop.signal, resume);
    const selected = await selectTargetsFrom(client, selection, { signal: stop.signal });
    const { targets, notRun, owners, othersLeftOut } = selected;
    const leftOut = othersLeftOut > 0 ? `${othersLeftOut} container${othersLeftOut === 1 ? '' : 's'} of other owners matched and ${othersLeftOut === 1 ? 'was' : 'were'} left out (--any-owner takes them)` : '';
    if (opts.dryRun) {
      // Each target with its owner: the subject that created it through callwire, or - where callwire did not.
      for (const target of targets) process.stdout.write(`${target}\t${ownerShown(owners, target)}\n`);
      for (const result of notRun) say(`callwire: ${result.target}: would not run: ${result.error?.message ?? ''}`);
      if (leftOut) say(`callwire: ${leftOut}`);
      return;
    }
    if (targets.length === 0 && notRun.length === 0) throw new Refusal(`no running container matches the selection${leftOut ? ` (${leftOut})` : ''}`, refused('operation_failure'));
    if (targets.length > maxTargets) throw new Refusal(`the selection matches ${targets.length} containers, more than --max-targets ${maxTargets}: narrow it, or raise --max-targets (--dry-run lists them)`, refused('invalid_input'));
    if (tty) {
      if (targets.length !== 1 || notRun.length > 0) throw new Refusal(`-t runs one command on one terminal; the selection matches ${targets.length} containers${notRun.length > 0 ? ` and ${notRun.length} that cannot run` : ''}`, refused('invalid_input'));
      await client.close();
      client = undefined;
      stop.dispose();
      return await single(targets[0]!);
    }
    if (resume) announceReconnects(client, resume, () => false);
    // What the selection meant that cannot run is reported with the targets, never silently left out.
    const ended = await fanOut(client, targets, notRun, cmd, opts, flags, { signal: stop.signal, parallel, timeoutMs, resume, owners });
    if (flags.json) await write('stdout', Buffer.from(`${toJsonLine(fanOutSummaryRecord(ended))}\n`));
    const exitCode = exitCodeOf(ended);
    if (exitCode !== 0) say(summaryOf(ended));
    // Ctrl-C is ours to report, as a single exec reports it; an exit status holds 8 bits, and a failure never reads as 0.
    process.exitCode = stop.which() ? outcomes.cancelled.execExit : exitCode === 0 ? 0 : exitCode % 256 || 1;
  } catch (error) {
    const classified = error instanceof Refusal ? error.classified : stop.which() ? refused('cancelled') : classify(error);
    const rpc = error instanceof RpcError ? ` (${error.code})` : '';
    say(`Error: ${error instanceof Error ? error.message : String(error)}${rpc}`);
    process.exitCode = outcomes[classified.outcome].execExit;
  } finally {
    stop.dispose();
    await client?.close().catch(() => undefined);
  }
}

function refused(outcome: Classified['outcome']): Classified {
  return { outcome, boundary: outcome === 'cancelled' ? 'execution' : 'input' };
}

interface RunControls {
  signal: AbortSignal;
  parallel: number | undefined;
  timeoutMs: number | undefined;
  resume: { graceMs: number } | undefined;
  owners: ReadonlyMap<string, string | null>;
}

/** A target's owner as shown: its subject, `-` where callwire did not create it, `?` for a name run as written, which no list row showed. */
function ownerShown(owners: ReadonlyMap<string, string | null>, target: string): string {
  const owner = owners.get(target);
  return owner === undefined ? '?' : owner === null ? '-' : escapeControls(owner);
}

/** The line a target that did not exit 0 ends with on stderr, as it ends (pdsh's "exited with exit code"). */
function endLine(result: TargetResult): Buffer {
  if (result.exitCode === 0) return Buffer.alloc(0);
  const how = result.exitCode === undefined ? `not run: ${result.error?.message ?? ''} (${result.error?.code ?? ''})` : `exit ${result.exitCode}`;
  return Buffer.from(`${escapeControls(`callwire: ${result.target}: ${how}`)}\n`);
}

/** Runs the fan-out and writes what each mode writes as frames come and targets end; then reports `notRun` as ended. */
async function fanOut(client: Client, targets: string[], notRun: readonly TargetResult[], cmd: readonly string[], opts: FanOutFlags, flags: GlobalFlags, run: RunControls): Promise<TargetResult[]> {
  const lines = new TargetLines();
  // Streamed lines go out in turns per target: one target's flood holds no other's line.
  const out = { stdout: new TurnWriter('stdout', lines, (bytes) => write('stdout', bytes)), stderr: new TurnWriter('stderr', lines, (bytes) => write('stderr', bytes)) };
  const { events, results } = execMany(client, targets, cmd, {
    // A target the reader cannot keep up with waits for its own turns; the others go on.
    pace: (target) => both(out.stdout.room(target), out.stderr.room(target)),
    encoding: 'binary',
    signal: run.signal,
    resume: run.resume ?? false,
    ...(run.parallel === undefined ? {} : { parallel: run.parallel }),
    ...(run.timeoutMs === undefined ? {} : { timeoutMs: run.timeoutMs }),
    ...(opts.env.length > 0 ? { env: opts.env } : {}),
    ...(opts.workdir ? { workingDir: opts.workdir } : {}),
    ...(opts.user ? { user: opts.user } : {}),
    ...(opts.interactive ? { stdin: process.stdin as AsyncIterable<Uint8Array> } : {}),
  });
  const limit = captureLimitBytes(targets.length);
  const captures = new Map<string, Capture>();
  const seen = new Map<string, number>();
  const grouped: Captured[] = [];
  const ended = async (result: TargetResult): Promise<void> => {
    const { target } = result;
    const capture = captures.get(target);
    captures.delete(target);
    const frames = seen.get(target) ?? 0;
    seen.delete(target);
    if (flags.json) return write('stdout', Buffer.from(`${toJsonLine(targetRecord(result, run.owners.get(target), capture, frames, opts.binary === true))}\n`));
    out.stdout.end(target);
    out.stderr.end(target, endLine(result));
    if (opts.group) grouped.push({ target, output: Buffer.concat(capture?.stdout ?? []), truncated: capture?.truncated ?? false });
  };
  try {
    for await (const event of events) {
      const { target } = event;
      if (!('frame' in event)) {
        await ended(event.result);
        continue;
      }
      const { frame } = event;
      seen.set(target, (seen.get(target) ?? 0) + 1);
      if (!('data' in frame)) continue;
      // --group groups stdout, as pdsh | dshbak does; stderr streams, prefixed, as it comes.
      if (flags.json || (opts.group && frame.stream === 'stdout')) keep(captures, target, frame.stream, frame.data, limit);
      else out[frame.stream].add(target, frame.data);
    }
    const all = await results;
    for (const result of notRun) await ended(result);
    return [...all, ...notRun];
  } finally {
    // Cancelled, what waits for the reader is dropped: the user asked for no more.
    await Promise.all([out.stdout.close(run.signal.aborted), out.stderr.close(run.signal.aborted)]);
    if (opts.group) await write('stdout', formatGroups(groupOutputs(grouped)));
  }
}

function both(a: Promise<void> | undefined, b: Promise<void> | undefined): Promise<void> | undefined {
  return a && b ? Promise.all([a, b]).then(() => undefined) : (a ?? b);
}

interface Capture {
  stdout: Buffer[];
  stderr: Buffer[];
  bytes: number;
  truncated: boolean;
}

function keep(captures: Map<string, Capture>, target: string, stream: 'stdout' | 'stderr', data: Uint8Array, limit: number): void {
  let capture = captures.get(target);
  if (!capture) captures.set(target, (capture = { stdout: [], stderr: [], bytes: 0, truncated: false }));
  if (capture.bytes + data.byteLength <= limit) capture[stream].push(Buffer.from(data));
  else capture.truncated = true;
  capture.bytes += data.byteLength;
}

/** A target's exec envelope (docs/cli.md "Exit codes"), as a single exec's --json prints it, with its `target` and its `owner` when the list showed it. */
function targetRecord(result: TargetResult, owner: string | null | undefined, capture: Capture | undefined, frames: number, binary: boolean): ResultRecord {
  const text = (parts: Buffer[] | undefined): string => Buffer.concat(parts ?? []).toString(binary ? 'base64' : 'utf8');
  const error = result.error ? new RpcError(result.error.code, result.error.message) : undefined;
  const record = execResultRecord({
    operation: 'docker/container/exec',
    call_id: null,
    // Its output frames, and the terminal frame when there was one.
    events_seen: frames + (result.exitCode === undefined ? 0 : 1),
    end: result.exitCode === undefined ? undefined : { exitCode: result.exitCode, stdoutBytes: result.stdoutBytes, stderrBytes: result.stderrBytes },
    failure: error ? { classified: classify(error), error } : undefined,
    capture: { stdout: text(capture?.stdout), stderr: text(capture?.stderr), encoding: binary ? 'base64' : 'utf8', truncated: capture?.truncated ?? false },
  });
  return { ...record, target: result.target, ...(owner === undefined ? {} : { owner }) };
}

/**
 * Writes and waits until the bytes are handed to the reader, not merely buffered: a slow
 * reader of ours holds the targets through their credit and loses nothing, and what waits
 * for it waits in turns (TurnWriter), not in this stream's buffer.
 */
async function write(stream: 'stdout' | 'stderr', bytes: Buffer): Promise<void> {
  if (bytes.byteLength === 0) return;
  const out = stream === 'stdout' ? process.stdout : process.stderr;
  await new Promise<void>((resolve, reject) => out.write(bytes, (error) => (error ? reject(error) : resolve())));
}
