import { randomUUID } from 'node:crypto';
import type { Command } from 'commander';
import { execFrames, RpcError, type Client, type ExecResult } from '../../client/index.js';
import { envEntry } from '../../contracts/index.js';
import { connectFrom, globalFlags, parseDuration, toJsonLine, writeErr, writeOut, type GlobalFlags } from '../context.js';
import { classify, CallerInputError, execResultRecord, outcomes, precedence, type Classified } from '../../outcome/index.js';
import { signalController } from '../signals.js';
import { addResumeOptions, announceReconnects, resumeOf } from '../resume.js';
import { localTty, type LocalTty } from '../tty.js';
import { DEFAULT_MAX_TARGETS, runFanOut, selectionOf, type FanOutFlags } from './exec-fan-out.js';
import { DEFAULT_PARALLEL } from '../../client/index.js';

interface ExecFlags extends FanOutFlags {
  env: string[];
  workdir?: string;
  user?: string;
  binary?: boolean;
  interactive?: boolean;
  tty?: boolean;
  resume?: string | boolean;
}


const JSON_CAPTURE_MAX_BYTES = 1024 * 1024;

/**
 * `docker exec` from anywhere: output byte for byte, the remote exit code as ours,
 * and our own failures on codes a command is unlikely to own (docs/cli.md "Exit codes").
 */
export function registerExec(program: Command): void {
  const command = program.command('exec').argument('[container-and-cmd...]', 'the container, then the command; with -l or --targets only the command');
  addResumeOptions(command)
    .description('run a command in a container (its stdout and stderr byte for byte, its exit code as ours), or in many with -l or --targets')
    .option('-e, --env <K=V>', 'set an environment variable (repeatable)', (v: string, all: string[]) => [...all, v], [])
    .option('-w, --workdir <dir>', 'working directory inside the container')
    .option('-u, --user <user>', 'user (name or uid[:gid])')
    .option('--binary', 'with --json: captured output as base64 instead of UTF-8 text')
    .option('-i, --interactive', 'stream local stdin to the command as it arrives (any size); without -i stdin is never read, as with docker exec')
    .option('-t, --tty', 'run the command on a pseudo-terminal the size of ours (resized with it); with -i our terminal goes raw, so keys such as Ctrl-C go to the command')
    .option('-l, --label <KEY[=VALUE]>', 'run in every running container with this label (repeatable: all must match)', (v: string, all: string[]) => [...all, v], [])
    .option('--targets <patterns>', 'run in every running container one of these matches (comma separated): NAME, HOST/NAME, globs with * in either part')
    .option('--any-owner', "with -l or a glob in --targets: take other callers' containers too (by default only yours and those callwire did not create; a name written whole is taken whoever owns it)")
    .option('--dry-run', 'with -l or --targets: list the targets, each with its owner (- where callwire did not create it), run nothing')
    .option('--parallel <n>', `with -l or --targets: targets running at once (default ${DEFAULT_PARALLEL})`)
    .option('--max-targets <n>', 'with -l or --targets: refuse a selection of more targets than this', String(DEFAULT_MAX_TARGETS))
    .option('--group', 'with -l or --targets: at the end, targets with identical stdout grouped (dshbak -c)')
    .addHelpText(
      'after',
      "\nAn interactive shell: callwire exec -it web sh\nAs with docker exec, everything after the container is the command: callwire exec web ls -la /\nMany containers, each line prefixed with its target, our exit code the largest of theirs: callwire exec -l role=web --targets 'a/*' -- uname -a",
    )
    .action(async (args: string[], opts: ExecFlags, command: Command) => {
      const flags = globalFlags(command);
      const selection = selectionOf(opts);
      if (selection) {
        await runFanOut(selection, args, opts, flags, opts.tty === true, (target) => runSingle(target, args, opts, flags));
        return;
      }
      const [containerId, ...cmd] = args;
      if (containerId === undefined || cmd.length === 0) {
        writeErr('Error: missing the command: callwire exec CONTAINER CMD... (or -l / --targets to choose containers, then CMD...)');
        process.exitCode = outcomes.invalid_input.execExit;
        return;
      }
      await runSingle(containerId, cmd, opts, flags);
    });
}

/** One container: `docker exec` from anywhere. */
async function runSingle(containerId: string, cmd: string[], opts: ExecFlags, flags: GlobalFlags): Promise<void> {
  const callId = randomUUID();
  const stop = signalController();
  let client: Client | undefined;
  let events = 0;
  let terminal: ExecResult | undefined;
  const capture = { stdout: [] as Buffer[], stderr: [] as Buffer[], bytes: 0, truncated: false };
  let failure: { classified: Classified; error: unknown } | undefined;
  let local: LocalTty | undefined;
  try {
    for (const e of opts.env) {
      const checked = envEntry.safeParse(e);
      if (!checked.success) throw new CallerInputError(`--env "${e}": ${checked.error.issues[0]?.message ?? 'must be KEY=VALUE'}`);
    }
    // As docker exec: a terminal session reading keys needs keys to read.
    if (opts.tty && opts.interactive && !process.stdin.isTTY) throw new CallerInputError('the input device is not a TTY: use -i without -t to stream a pipe or file');
    if (opts.tty && flags.json) throw new CallerInputError('--json captures output; it does not go with -t');
    const deadlineMs = flags.timeout ? parseDuration(flags.timeout, '--timeout') : undefined;
    const resume = resumeOf(opts.resume);
    client = await connectFrom(flags, stop.signal, resume);
    if (opts.tty) local = localTty(opts.interactive === true);
    if (resume) announceReconnects(client, resume, () => local !== undefined);
    const frames = execFrames(client, containerId, cmd, {
      encoding: 'binary',
      id: callId,
      signal: stop.signal,
      ...(opts.env.length > 0 ? { env: opts.env } : {}),
      ...(opts.workdir ? { workingDir: opts.workdir } : {}),
      ...(opts.user ? { user: opts.user } : {}),
      // Like docker exec: stdin only with -i, streamed as it arrives and as the server takes it;
      // without -i it is never read, so an inherited pipe that stays open never holds a run.
      ...(opts.interactive ? { stdin: process.stdin as AsyncIterable<Uint8Array> } : {}),
      ...(local ? { tty: local.size } : {}),
      ...(deadlineMs === undefined ? {} : { deadlineMs }),
      // A fleet gateway's token names the host that runs the call: for a bare name the caller did not choose it (docs/fleet.md "Security").
      ...(containerId.includes('/') ? {} : { onResumable: (token: string) => announceHost(token, local !== undefined) }),
    });
    local?.watchResize((cols, rows) => frames.resize(cols, rows));
    // The SDK's exec holds the terminal-frame rule (EXEC-4); here only the bytes are written.
    for (let step = await frames.next(); ; step = await frames.next()) {
      events++;
      if (step.done) {
        terminal = step.value;
        break;
      }
      const frame = step.value;
      if (!('data' in frame)) continue;
      const bytes = Buffer.from(frame.data);
      if (flags.json) {
        if (capture.bytes + bytes.byteLength <= JSON_CAPTURE_MAX_BYTES) capture[frame.stream].push(bytes);
        else capture.truncated = true;
        capture.bytes += bytes.byteLength;
      } else {
        const out = frame.stream === 'stdout' ? process.stdout : process.stderr;
        // Wait for slow readers of our stdout: that is backpressure, not loss.
        if (!out.write(bytes)) await new Promise((resolve) => out.once('drain', resolve));
      }
    }
  } catch (error) {
    failure = { classified: classify(error), error };
  } finally {
    // Before anything is printed: an error message in raw mode would lose its line breaks.
    local?.restore();
    stop.dispose();
    await client?.close().catch(() => undefined);
  }

  // A signal makes whatever failed after it a cancellation, unless a deadline passed first.
  if (failure && stop.which()) failure.classified = precedence([failure.classified, { outcome: 'cancelled', boundary: 'execution' }])!;
  const message = failure ? (failure.error instanceof Error ? failure.error.message : String(failure.error)) : '';
  const rpc = failure?.error instanceof RpcError ? failure.error : undefined;
  const text = (parts: Buffer[]): string => Buffer.concat(parts).toString(opts.binary ? 'base64' : 'utf8');
  // One result record with or without --json: its exit_code is our exit code.
  const line = execResultRecord({
    operation: 'docker/container/exec',
    call_id: client ? callId : null,
    events_seen: events,
    end: terminal,
    failure,
    ...(flags.json ? { capture: { stdout: text(capture.stdout), stderr: text(capture.stderr), encoding: opts.binary ? 'base64' : 'utf8', truncated: capture.truncated } } : {}),
  });
  if (flags.json) {
    if (!(await writeOut(`${toJsonLine(line)}\n`))) {
      process.exitCode = outcomes.infrastructure_failure.execExit;
      return;
    }
  } else if (failure) {
    writeErr(`${local ? '\r\n' : ''}Error: ${message}${rpc ? ` (${rpc.code})` : ''}`);
  }
  process.exitCode = line.exit_code;
}

let hostAnnounced = false;

/** Says once, on stderr, which fleet host a gateway sent the call to (its resume token, `fw1.<host>.…`, names it). */
function announceHost(token: string, raw: boolean): void {
  // Only a fleet token loads the fleet's module (and NATS's) into the CLI.
  if (hostAnnounced || !token.startsWith('fw1.')) return;
  hostAnnounced = true;
  void import('../../fleet/index.js').then(({ parseFleetToken }) => {
    const host = parseFleetToken(token)?.host;
    if (host !== undefined) process.stderr.write(`callwire: running on fleet host ${host} (resolved by the gateway)${raw ? '\r\n' : '\n'}`);
  });
}
