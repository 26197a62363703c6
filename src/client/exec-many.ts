import { Wakeup } from '../flow/index.js';
import { filter, type Observable } from '../rx/index.js';
import { RpcError } from '../protocol/index.js';
import type { Client } from './client.js';
import { execFrames, type ExecOptions, type ExecOutput } from './exec.js';
import { NOT_RUN_EXIT_CODE, exitCodeOf, summaryOf, type TargetResult } from '../contracts/index.js';
import { StdinFanOut } from './fan-out-stdin.js';
import { FrameFanIn } from './frame-fan-in.js';
import { selectTargets, selectTargetsFrom, type TargetSelection } from './target-selection.js';

export { NOT_RUN_EXIT_CODE, exitCodeOf, selectTargets, summaryOf, type TargetResult, type TargetSelection };

/** Targets run at once unless `parallel` says otherwise. */
export const DEFAULT_PARALLEL = 64;

export interface ExecManyOptions {
  /** Targets running at once (default DEFAULT_PARALLEL). */
  readonly parallel?: number;
  /** Each target's own deadline, from its start (`deadline_ms`). */
  readonly timeoutMs?: number;
  /**
   * The same stdin for every target. Bytes are shared as they are; a source is read
   * once and its chunks go to every target at the pace of the slowest reader (only one
   * chunk held), so every target must run at once: more targets than `parallel` is
   * INVALID_INPUT.
   */
  readonly stdin?: Uint8Array | AsyncIterable<Uint8Array>;
  readonly env?: readonly string[];
  readonly user?: string;
  readonly workingDir?: string;
  /** Aborting it aborts every target's call, which kills its process (EXEC-5), and starts no more. */
  readonly signal?: AbortSignal;
  readonly encoding?: 'utf8' | 'binary';
  /** Asks every target's stream to outlive a lost connection (spec §4.9), as `exec` does. */
  readonly resume?: ExecOptions['resume'];
  /**
   * Asked before each frame of a target is handed on: a promise holds that target's frames
   * back (its call's credit then holds its command) until it settles. For a consumer that
   * writes each target at a pace of its own (the CLI's turns, docs/security.md "Fan-out"),
   * so that one target it cannot keep up with holds nobody else.
   */
  readonly pace?: (target: string) => Promise<void> | undefined;
}

/** One output frame of one target. */
export interface TargetFrame {
  readonly target: string;
  readonly frame: ExecOutput;
}

/** A target ended: after all of its frames. */
export interface TargetEnd {
  readonly target: string;
  readonly result: TargetResult;
}

/** What a fan-out streams: each target's frames, then its end. */
export type TargetEvent = TargetFrame | TargetEnd;

export interface ExecMany {
  /**
   * Every target's frames as they come. Subscribe (or start the loop) in the same turn
   * as the call: frames nobody listens to are not kept. A loop that falls behind holds
   * the targets (their output credit), a subscriber does not.
   */
  readonly frames: Observable<TargetFrame> & AsyncIterable<TargetFrame>;
  /** The same frames with each target's end after its last frame, as it ends (for output per target as it ends). */
  readonly events: Observable<TargetEvent> & AsyncIterable<TargetEvent>;
  /**
   * One result per target in the order they ended, then, for a selection, one per target
   * it meant that cannot run (a known container of a fleet host that is down, `HOST/*` for
   * a host that did not answer the list: `Selected.notRun`). Rejects only when the
   * selection itself fails.
   */
  readonly results: Promise<TargetResult[]>;
}

/**
 * Runs `cmd` in every target, each as its own exec call on this client's one connection,
 * `parallel` at a time, each with its own deadline and resumable as `exec` is. A target
 * refused with LIMIT_EXCEEDED before any output (the identity's exec cap, spec §9) is run
 * again once another target of this fan-out ends, with the fan-out's parallelism lowered
 * to what was running, so a fan-out never needs more than the caller could run by hand;
 * refused with nothing else running, or with a streamed stdin, which cannot be given again
 * from its start, it is reported (not run), never run again with less of its stdin.
 */
export function execMany(client: Client, targets: TargetSelection | readonly string[], cmd: readonly string[], options: ExecManyOptions = {}): ExecMany {
  const fanIn = new FrameFanIn<TargetEvent>();
  const results = (async (): Promise<TargetResult[]> => {
    // A turn for the caller to subscribe before the first frame.
    await Promise.resolve();
    const selected = isTargetList(targets) ? { targets: [...new Set(targets)], notRun: [] } : await selectTargetsFrom(client, targets, options.signal ? { signal: options.signal } : {});
    const ran = await runAll(client, selected.targets, cmd, options, fanIn);
    for (const result of selected.notRun) {
      ran.push(result);
      await fanIn.deliver(result.target, { target: result.target, result });
    }
    return ran;
  })();
  results.then(
    () => fanIn.end(),
    (error: unknown) => fanIn.end(error),
  );
  return { frames: framesOf(fanIn.stream), events: fanIn.stream, results };
}

function isFrame(event: TargetEvent): event is TargetFrame {
  return 'frame' in event;
}

/** The events without the ends, as an Observable and a pulled loop. */
function framesOf(events: Observable<TargetEvent> & AsyncIterable<TargetEvent>): Observable<TargetFrame> & AsyncIterable<TargetFrame> {
  return Object.assign(events.pipe(filter(isFrame)), {
    [Symbol.asyncIterator]: (): AsyncIterator<TargetFrame> => {
      const loop = events[Symbol.asyncIterator]();
      return {
        next: async () => {
          for (;;) {
            const step = await loop.next();
            if (step.done || isFrame(step.value)) return step as IteratorResult<TargetFrame>;
          }
        },
        return: async () => (await loop.return?.(), { value: undefined, done: true }),
      };
    },
  });
}

function isTargetList(targets: TargetSelection | readonly string[]): targets is readonly string[] {
  return Array.isArray(targets);
}

type Outcome = TargetResult | 'limited';

async function runAll(client: Client, targets: readonly string[], cmd: readonly string[], options: ExecManyOptions, fanIn: FrameFanIn<TargetEvent>): Promise<TargetResult[]> {
  const parallel = Math.max(1, Math.floor(options.parallel ?? DEFAULT_PARALLEL));
  const source = options.stdin === undefined || options.stdin instanceof Uint8Array ? undefined : options.stdin;
  if (source && targets.length > parallel) {
    throw new RpcError('INVALID_INPUT', `a streamed stdin goes to every target at once: ${targets.length} targets need a parallelism of at least ${targets.length} (it is ${parallel})`);
  }
  const stdin = source ? new StdinFanOut(source, targets) : undefined;
  // A run refused for the caps may be made again only with its whole stdin: none, or bytes given whole.
  const rerunnable = source === undefined;
  const queue = [...targets];
  const results: TargetResult[] = [];
  const ended = new Wakeup();
  let cap = parallel;
  let running = 0;
  const finish = async (result: TargetResult): Promise<void> => {
    results.push(result);
    await fanIn.deliver(result.target, { target: result.target, result });
  };
  const settle = async (target: string, outcome: Outcome): Promise<void> => {
    if (outcome !== 'limited') await finish(outcome);
    else if (running === 1) await finish(notRun(target, 'LIMIT_EXCEEDED', 'refused by the server (LIMIT_EXCEEDED) with no other target of this fan-out running'));
    else {
      cap = running - 1;
      queue.unshift(target);
    }
    running--;
    ended.wake();
  };
  while (queue.length > 0 || running > 0) {
    if (options.signal?.aborted && queue.length > 0) {
      for (const target of queue.splice(0)) {
        stdin?.leave(target);
        await finish(notRun(target, 'CANCELLED', 'the fan-out was cancelled before this target started'));
      }
      // A target may have ended while these were delivered: look again before waiting.
      continue;
    }
    if (queue.length === 0 || running >= cap) {
      await ended.wait();
      continue;
    }
    const target = queue.shift() as string;
    running++;
    void runOne(client, target, cmd, options, fanIn, stdin, rerunnable).then((outcome) => settle(target, outcome));
  }
  return results;
}

async function runOne(client: Client, target: string, cmd: readonly string[], options: ExecManyOptions, fanIn: FrameFanIn<TargetEvent>, stdin: StdinFanOut | undefined, rerunnable: boolean): Promise<Outcome> {
  const counted = { stdout: 0, stderr: 0 };
  let output = false;
  const frames = execFrames(client, target, cmd, {
    ...(options.encoding === undefined ? {} : { encoding: options.encoding }),
    ...(options.env ? { env: options.env } : {}),
    ...(options.user === undefined ? {} : { user: options.user }),
    ...(options.workingDir === undefined ? {} : { workingDir: options.workingDir }),
    ...(options.signal ? { signal: options.signal } : {}),
    ...(options.timeoutMs === undefined ? {} : { deadlineMs: options.timeoutMs }),
    ...(options.resume === undefined ? {} : { resume: options.resume }),
    ...(stdin ? { stdin: stdin.reader(target) } : options.stdin instanceof Uint8Array ? { stdin: options.stdin } : {}),
  });
  try {
    for (;;) {
      const step = await frames.next();
      if (step.done) return { target, exitCode: step.value.exitCode, stdoutBytes: step.value.stdoutBytes, stderrBytes: step.value.stderrBytes };
      output = true;
      const frame = step.value;
      counted[frame.stream] += 'data' in frame ? frame.data.byteLength : utf8Length(frame.text);
      const paced = options.pace?.(target);
      if (paced) await untilAborted(paced, options.signal);
      await fanIn.deliver(target, { target, frame });
    }
  } catch (error) {
    const rpc = RpcError.from(error);
    // Another run needs the stdin from its start, which a streamed source, read once, no longer has.
    if (rpc.code === 'LIMIT_EXCEEDED' && !output && rerunnable) return 'limited';
    return { target, error: { code: rpc.code, message: rpc.message }, stdoutBytes: counted.stdout, stderrBytes: counted.stderr };
  } finally {
    stdin?.leave(target);
  }
}

/** `promise`, or the abort of `signal`, whichever comes first: a cancelled fan-out does not wait on its consumer. */
function untilAborted(promise: Promise<void>, signal: AbortSignal | undefined): Promise<void> {
  if (!signal) return promise;
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const done = (): void => {
      signal.removeEventListener('abort', done);
      resolve();
    };
    signal.addEventListener('abort', done, { once: true });
    promise.then(done, (error: unknown) => {
      signal.removeEventListener('abort', done);
      reject(error as Error);
    });
  });
}

function notRun(target: string, code: string, message: string): TargetResult {
  return { target, error: { code, message }, stdoutBytes: 0, stderrBytes: 0 };
}

const encoder = new TextEncoder();
function utf8Length(text: string): number {
  return encoder.encode(text).byteLength;
}
