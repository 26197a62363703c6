import { randomUUID } from 'node:crypto';
import { fstatSync } from 'node:fs';
import { isatty } from 'node:tty';
import type { Command } from 'commander';
import { RpcError, type Client } from '../../client/index.js';
import { connectFrom, globalFlags, parseCount, parseDuration, readInput, toJsonLine, unlessCancelled, writeErr } from '../context.js';
import { classify, outcomes } from '../../outcome/index.js';
import { addResumeOptions, announceReconnects, resumeOf } from '../resume.js';
import { signalController } from '../signals.js';

type Reason = 'limit' | 'timeout' | 'signal' | 'stdin' | 'completed';

/**
 * The long-running consumer contract (docs/cli.md "The command line", subscribe): ready marker on stderr,
 * one JSON line per value on stdout, controlled stops exit 0 with an exited line
 * and abort the call server-side; failures exit non-zero with an Error line.
 */
export function registerSubscribe(program: Command): void {
  addResumeOptions(program.command('subscribe <operation>'))
    .description('stream a subscription: one JSON line per value on stdout; stops on --max-events, --duration, the end of a piped or terminal stdin, SIGINT or SIGTERM')
    .option('--input <json|@file>', 'the input as JSON, or @file (default: null; stdin is the stop signal here, not input)')
    .option('--max-events <n>', 'stop after n values')
    .option('--duration <d>', 'stop after this long, e.g. 30s, 5m')
    .option('--ignore-stdin', "stdin's end does not stop the run (a scheduler that hands over a pipe it has already closed)")
    .addHelpText(
      'after',
      '\nStops: --max-events (reason limit), --duration (timeout), stdin EOF (stdin), SIGINT/SIGTERM (signal), the stream ending (completed).\n' +
        'stdin EOF stops only a pipe (a parent closing it stops its child) or a terminal (Ctrl-D); /dev/null, a file or\n' +
        'no stdin at all (cron, CI) end at once and say nothing, so the run goes on to its own end; --ignore-stdin: never.\n' +
        'Each stop aborts the call so the server tears the subscription down, then prints\n' +
        '  [callwire] exited — received N event(s) in Xs (reason: ...)\n' +
        'and exits 0. To stay resident, feed a stdin that never ends (< <(tail -f /dev/null)) or bound the run.\n' +
        'Avoid kill -9: it cannot abort the call; the server only notices when the connection drops.',
    )
    .action(async (operation: string, opts: { input?: string; maxEvents?: string; duration?: string; ignoreStdin?: boolean; resume?: string | boolean }, command: Command) => {
      const flags = globalFlags(command);
      const stop = signalController();
      let client: Client | undefined;
      const started = Date.now();
      let received = 0;
      try {
        const maxEvents = opts.maxEvents === undefined ? undefined : parseCount(opts.maxEvents, '--max-events');
        const durationMs = opts.duration === undefined ? undefined : parseDuration(opts.duration, '--duration');
        const input = opts.input === undefined ? null : await unlessCancelled(readInput(opts.input), stop.signal, 'reading the input');
        const resume = resumeOf(opts.resume);
        client = await connectFrom(flags, stop.signal, resume);
        if (resume) announceReconnects(client, resume, () => false);
        // "Admitted": the operation exists, the caller may call it, and it streams.
        const spec = await client.schema(operation, { signal: stop.signal });
        if (spec.kind !== 'subscription') throw new RpcError('INVALID_OPERATION_TYPE', `${operation} is a ${spec.kind}, not a subscription: use callwire call`);

        const callId = randomUUID();
        const reason = await new Promise<Reason>((resolve, reject) => {
          // The ready marker follows the server's admission of the call (CR-1), so a refusal
          // such as INVALID_INPUT can never come after it.
          const ready = (): void => {
            if (!flags.quiet) writeErr(`[callwire] ready op=${operation} call_id=${callId}`);
          };
          const subscription = client!.subscribe(operation, input, { id: callId, onAdmitted: ready }).subscribe({
            next(value) {
              process.stdout.write(`${toJsonLine(value)}\n`);
              received++;
              if (maxEvents !== undefined && received >= maxEvents) end('limit');
            },
            error: reject,
            complete: () => resolve('completed'),
          });
          const timers: ReturnType<typeof setTimeout>[] = [];
          const end = (why: Reason): void => {
            subscription.unsubscribe(); // sends call.aborted
            for (const t of timers) clearTimeout(t);
            resolve(why);
          };
          if (durationMs !== undefined) timers.push(setTimeout(() => end('timeout'), durationMs));
          // A signal that came while connecting ends the run here, as a controlled stop.
          if (stop.signal.aborted) end('signal');
          else stop.signal.addEventListener('abort', () => end('signal'), { once: true });
          if (!opts.ignoreStdin && stdinEndIsAStop()) {
            process.stdin.on('end', () => end('stdin'));
            process.stdin.on('error', () => end('stdin'));
            process.stdin.resume();
          }
        });
        await client.close();
        await new Promise<void>((resolve) => process.stdout.write('', () => resolve()));
        writeErr(`[callwire] exited — received ${received} event(s) in ${((Date.now() - started) / 1000).toFixed(1)}s (reason: ${reason})`);
        process.exitCode = 0;
      } catch (error) {
        if (error instanceof RpcError && error.code === 'CANCELLED' && stop.which()) {
          // SIGINT/SIGTERM before the call started: still a controlled stop (docs/cli.md "The command line", subscribe).
          await client?.close().catch(() => undefined);
          writeErr(`[callwire] exited — received ${received} event(s) in ${((Date.now() - started) / 1000).toFixed(1)}s (reason: signal)`);
          process.exitCode = 0;
          return;
        }
        const { outcome } = classify(error);
        const rpc = error instanceof RpcError ? ` (${error.code})` : '';
        writeErr(`Error: ${error instanceof Error ? error.message : String(error)}${rpc}`);
        process.exitCode = outcomes[outcome].exit || 1;
        await client?.close().catch(() => undefined);
      } finally {
        stop.dispose();
        process.stdin.pause();
        process.stdin.destroy();
      }
    });
}

/**
 * Whether stdin's end is a stop (the subprocess contract: a parent closes the pipe to stop
 * its child; a terminal's Ctrl-D). /dev/null, a file or no stdin at all are at their end
 * from the start and say nothing by it: cron and CI hand those over, and a run there
 * must go on to its own end, not exit 0 at once with no event.
 */
function stdinEndIsAStop(): boolean {
  try {
    const stat = fstatSync(0);
    return stat.isFIFO() || stat.isSocket() || isatty(0);
  } catch {
    return false; // no stdin at all (a closed descriptor)
  }
}
