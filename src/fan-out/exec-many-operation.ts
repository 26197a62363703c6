import { setMaxListeners } from 'node:events';
import type { z } from 'zod';
import { Client, execMany, exitCodeOf, selectTargetsFrom, summaryOf, type TargetResult } from '../client/index.js';
import { execContract, execManyContract, MAX_FAN_OUT_TARGETS, MAX_RESULT_MESSAGE_CHARS } from '../contracts/index.js';
import { defineOperation, type CallContext, type Dispatcher, type Operation } from '../dispatcher/index.js';
import { RpcError } from '../protocol/index.js';
import { LocalConnection } from './local-connection.js';

type FanOutInput = z.output<typeof execManyContract.input>;
type FanOutItem = z.input<typeof execManyContract.output>;

/**
 * `docker/container/exec-many` (docs/security.md "Fan-out"): the SDK's `execMany`
 * run here, over a connection to `dispatcher` as the caller. Each target is an exec
 * call of the caller's, so a fan-out can do nothing the caller could not do call by
 * call. On a fleet gateway those calls are the gateway's own fleet operations, so it
 * runs at the gateway over every host the caller may reach; on a server, over its engine.
 */
export function execManyOperation(dispatcher: Dispatcher): Operation {
  return defineOperation({ ...execManyContract, handler: (input, ctx) => runFanOut(dispatcher, input, ctx) });
}

/** Where exec is served (an engine's, or a gateway's over the fleet), so is running it in many containers; elsewhere nothing. */
export function fanOutOperations(dispatcher: Dispatcher): Operation[] {
  return dispatcher.registry.lookup(execContract.name) ? [execManyOperation(dispatcher)] : [];
}

async function* runFanOut(dispatcher: Dispatcher, input: FanOutInput, ctx: CallContext): AsyncGenerator<FanOutItem> {
  const connection = new LocalConnection(dispatcher, ctx);
  const client = new Client(connection);
  // Every live target listens for the call's end: up to `parallel` listeners, not a leak to warn of.
  const stop = new AbortController();
  setMaxListeners(0, stop.signal);
  const abort = (): void => stop.abort(ctx.signal.reason);
  if (ctx.signal.aborted) abort();
  else ctx.signal.addEventListener('abort', abort, { once: true });
  try {
    const selection = { ...(input.labels ? { labels: input.labels } : {}), ...(input.targets ? { patterns: input.targets } : {}), ...(input.anyOwner ? { anyOwner: true } : {}) };
    const selected = await selectTargetsFrom(client, selection, { signal: stop.signal });
    if (selected.targets.length > MAX_FAN_OUT_TARGETS) {
      throw new RpcError('INVALID_INPUT', `the selection names ${selected.targets.length} targets; a fan-out runs at most ${MAX_FAN_OUT_TARGETS}: narrow it with more labels or patterns`);
    }
    yield { targets: selected.targets, owners: Object.fromEntries(selected.owners), othersLeftOut: selected.othersLeftOut };
    const run = execMany(client, selected.targets, input.cmd, {
      ...(input.parallel === undefined ? {} : { parallel: input.parallel }),
      signal: stop.signal,
      encoding: input.encoding,
      ...(input.timeoutMs === undefined ? {} : { timeoutMs: input.timeoutMs }),
      ...(input.stdin === undefined ? {} : { stdin: input.stdin }),
      ...(input.env ? { env: input.env } : {}),
      ...(input.user === undefined ? {} : { user: input.user }),
      ...(input.workingDir === undefined ? {} : { workingDir: input.workingDir }),
    });
    // Left early (the call cancelled), nobody awaits the results: their rejection is not this call's error then.
    run.results.catch(() => undefined);
    // Each target's frames, then its result as it ends.
    for await (const event of run.events) yield 'frame' in event ? event : { target: event.target, result: bounded(event.result) };
    const unlisted = selected.notRun.map(bounded);
    for (const result of unlisted) yield { target: result.target, result };
    const results = [...(await run.results).map(bounded), ...unlisted];
    yield { summary: { targets: results.length, exitCode: exitCodeOf(results), text: summaryOf(results), results }, terminal: true };
  } finally {
    ctx.signal.removeEventListener('abort', abort);
    await connection.close();
  }
}

/** A result as the summary keeps it: an error's message cut, so 10,000 of them stay far below a frame's bound. */
function bounded(result: TargetResult): TargetResult {
  const { target, exitCode, error, stdoutBytes, stderrBytes } = result;
  return {
    target,
    ...(exitCode === undefined ? {} : { exitCode }),
    ...(error ? { error: { code: error.code, message: cut(error.message) } } : {}),
    stdoutBytes,
    stderrBytes,
  };
}

const cut = (message: string): string => (message.length > MAX_RESULT_MESSAGE_CHARS ? `${message.slice(0, MAX_RESULT_MESSAGE_CHARS - 1)}…` : message);
