import { randomUUID } from 'node:crypto';
import type { Command } from 'commander';
import { RpcError, type Client } from '../../client/index.js';
import { connectFrom, globalFlags, parseCount, parseDuration, readInput, toJsonLine, unlessCancelled, writeErr, writeOut } from '../context.js';
import { classify, resultRecord, errorFields, outcomes, type Classified } from '../../outcome/index.js';
import { signalController } from '../signals.js';

// docs/cli.md "The command line": a retryable error gets at most two more attempts.
const MAX_RETRIES = 2;

export function registerCall(program: Command): void {
  program
    .command('call <operation>')
    .description('one-shot call: prints the output as JSON on stdout and exits per the outcome table')
    .option('--input <json|@file>', 'the input as JSON, or @file to read it from a file (default: JSON on stdin when it is not a terminal, else null)')
    .option('--retries <n>', `retry errors the server marks retryable, at most n more times (at most ${MAX_RETRIES})`, '0')
    .action(async (operation: string, opts: { input?: string; retries: string }, command: Command) => {
      const flags = globalFlags(command);
      const callId = randomUUID();
      const stop = signalController();
      let client: Client | undefined;
      let eventsSeen = 0;
      const finish = async (result: { output?: unknown; error?: unknown }): Promise<void> => {
        const failure: Classified = result.error === undefined ? { outcome: 'success', boundary: 'none' } : classify(result.error);
        const rpc = result.error instanceof RpcError ? result.error : undefined;
        const message = result.error instanceof Error ? result.error.message : result.error === undefined ? '' : String(result.error);
        let written = true;
        if (flags.json) {
          const line = resultRecord({
            command: 'call',
            outcome: failure.outcome,
            failure_boundary: failure.boundary,
            operation,
            call_id: client ? callId : null,
            events_seen: eventsSeen,
            ...(result.error === undefined ? { output: result.output } : {}),
            ...(result.error === undefined ? {} : errorFields(result.error, failure.outcome)),
          });
          written = await writeOut(`${toJsonLine(line)}\n`);
        } else if (result.error === undefined) {
          written = await writeOut(`${toJsonLine(result.output)}\n`);
        } else {
          writeErr(`Error: ${message}${rpc ? ` (${rpc.code})` : ''}`);
        }
        // One output attempt: a failed write is reported, never retried (docs/cli.md "Exit codes").
        process.exitCode = written ? outcomes[failure.outcome].exit : outcomes.infrastructure_failure.exit;
        if (!written) writeErr('Error: could not write the result to stdout');
      };

      try {
        const retries = Math.min(parseCount(opts.retries, '--retries', 0), MAX_RETRIES);
        const deadlineMs = flags.timeout ? parseDuration(flags.timeout, '--timeout') : undefined;
        const input = await unlessCancelled(readInput(opts.input), stop.signal, 'reading the input');
        client = await connectFrom(flags, stop.signal);
        for (let attempt = 0; ; attempt++) {
          try {
            const output = await client.call(operation, input, {
              id: attempt === 0 ? callId : `${callId}-retry${attempt}`,
              signal: stop.signal,
              ...(deadlineMs === undefined ? {} : { deadlineMs }),
            });
            eventsSeen++;
            await finish({ output });
            return;
          } catch (error) {
            if (error instanceof RpcError && error.code !== 'CANCELLED' && error.code !== 'UNAVAILABLE') eventsSeen++;
            const retry = error instanceof RpcError && error.retryable && attempt < retries && !stop.signal.aborted && (await mayRetry(client, operation, error));
            if (!retry) throw error;
            await new Promise((resolve) => setTimeout(resolve, retryDelayMs(error, attempt)));
          }
        }
      } catch (error) {
        await finish({ error });
      } finally {
        stop.dispose();
        await client?.close().catch(() => undefined);
      }
    });
}

/**
 * A retryable error says trying again may succeed, not that it is harmless: after
 * TIMEOUT a mutation may have run. Only idempotent operations are retried, and any
 * operation refused at admission (LIMIT_EXCEEDED: its handler never ran; spec §6.1).
 */
async function mayRetry(client: Client, operation: string, error: RpcError): Promise<boolean> {
  if (error.code === 'LIMIT_EXCEEDED') return true;
  const spec = await client.schema(operation).catch(() => undefined);
  return spec?.['idempotent'] === true;
}

/** The server's hint (`details.retryAfterMs`) when given, else a short growing pause. */
function retryDelayMs(error: RpcError, attempt: number): number {
  const hint = (error.details as { retryAfterMs?: unknown } | undefined)?.retryAfterMs;
  return typeof hint === 'number' && hint >= 0 ? hint : 200 * 2 ** attempt;
}
