import { describe, expect, it } from 'vitest';
import { execMany, exitCodeOf, summaryOf, type Client, type TargetEvent, type TargetResult } from '../../src/client/index.js';
import { StdinFanOut } from '../../src/client/fan-out-stdin.js';
import type { ExecInputItem } from '../../src/contracts/index.js';
import { RpcError } from '../../src/protocol/index.js';

type Frame = { stream: 'stdout' | 'stderr'; text: string } | { exitCode: number; terminal: true; stdoutBytes: number; stderrBytes: number };
type Run = (target: string, stdin: AsyncIterable<ExecInputItem>, signal: AbortSignal | undefined) => AsyncGenerator<Frame>;

/** A client whose exec calls run `run` for their container: what execMany sees of a server. */
function fakeClient(run: Run): Client {
  return {
    iterate: (_contract: unknown, input: { containerId: string }, options: { input: AsyncIterable<ExecInputItem>; signal?: AbortSignal }) => run(input.containerId, options.input, options.signal),
  } as unknown as Client;
}

const end = (exitCode: number): Frame => ({ exitCode, terminal: true, stdoutBytes: 0, stderrBytes: 0 });
const tick = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 1));
const targets = (n: number): string[] => Array.from({ length: n }, (_, i) => `h/t${i}`);

describe('execMany', () => {
  it('runs every target, parallel at a time, each frame tagged with its target and each end after its frames', async () => {
    let live = 0;
    let most = 0;
    const client = fakeClient(async function* (target) {
      live++;
      most = Math.max(most, live);
      await tick();
      yield { stream: 'stdout', text: `${target}\n` };
      await tick();
      live--;
      yield end(target.endsWith('7') ? 7 : 0);
    });
    const { events, results } = execMany(client, targets(10), ['x'], { parallel: 3 });
    const seen: TargetEvent[] = [];
    for await (const event of events) seen.push(event);
    const all = await results;
    expect(most).toBe(3);
    expect(all).toHaveLength(10);
    expect(exitCodeOf(all)).toBe(7);
    for (const target of targets(10)) {
      const mine = seen.filter((e) => e.target === target);
      expect(mine.map((e) => ('frame' in e ? 'frame' : 'end'))).toEqual(['frame', 'end']);
      expect('frame' in mine[0]! && 'text' in mine[0].frame && mine[0].frame.text).toBe(`${target}\n`);
    }
  });

  it('frames reach an Observable subscriber too, without the ends', async () => {
    const client = fakeClient(async function* (target) {
      yield { stream: 'stderr', text: target };
      yield end(0);
    });
    const { frames, results } = execMany(client, targets(3), ['x']);
    const got: string[] = [];
    frames.subscribe((f) => got.push(`${f.target}:${f.frame.stream}`));
    await results;
    expect(got.sort()).toEqual(['h/t0:stderr', 'h/t1:stderr', 'h/t2:stderr']);
  });

  it('a target refused LIMIT_EXCEEDED runs again once another ends, at the parallelism that was running', async () => {
    let live = 0;
    let most = 0;
    let refusals = 0;
    const cap = 2;
    const client = fakeClient(async function* () {
      if (live >= cap) {
        refusals++;
        throw new RpcError('LIMIT_EXCEEDED', 'the identity has 2 exec sessions');
      }
      live++;
      most = Math.max(most, live);
      await tick();
      live--;
      yield end(0);
    });
    const { results } = execMany(client, targets(8), ['x'], { parallel: 5 });
    const all = await results;
    expect(all.map((r) => r.exitCode)).toEqual(Array(8).fill(0));
    expect(most).toBe(cap);
    expect(refusals).toBeGreaterThan(0);
  });

  it('refused LIMIT_EXCEEDED with nothing else running, a target is reported, not retried for ever', async () => {
    const client = fakeClient(async function* () {
      yield* [];
      throw new RpcError('LIMIT_EXCEEDED', 'no exec sessions left');
    });
    const all = await execMany(client, targets(3), ['x'], { parallel: 3 }).results;
    expect(all.map((r) => r.error?.code)).toEqual(['LIMIT_EXCEEDED', 'LIMIT_EXCEEDED', 'LIMIT_EXCEEDED']);
    expect(exitCodeOf(all)).toBe(123);
  });

  it('an error after output is the target\'s result, with the bytes it printed; the others complete', async () => {
    const client = fakeClient(async function* (target) {
      yield { stream: 'stdout', text: 'héllo' };
      if (target === 'h/t1') throw new RpcError('UNAVAILABLE', 'host h is down');
      yield end(0);
    });
    const all = await execMany(client, targets(3), ['x']).results;
    const failed = all.find((r) => r.target === 'h/t1');
    expect(failed).toEqual({ target: 'h/t1', error: { code: 'UNAVAILABLE', message: 'host h is down' }, stdoutBytes: 6, stderrBytes: 0 });
    expect(all.filter((r) => r.exitCode === 0)).toHaveLength(2);
  });

  it('aborting cancels the running targets and starts no more: each queued one is reported cancelled', async () => {
    const abort = new AbortController();
    let started = 0;
    const client = fakeClient(async function* (_target, _stdin, signal) {
      started++;
      await new Promise<void>((resolve) => signal!.addEventListener('abort', () => resolve(), { once: true }));
      yield* [];
      throw new RpcError('CANCELLED', 'the call was cancelled by the caller');
    });
    const run = execMany(client, targets(5), ['x'], { parallel: 2, signal: abort.signal });
    await tick();
    abort.abort();
    const all = await run.results;
    expect(started).toBe(2);
    expect(all.map((r) => r.error?.code)).toEqual(Array(5).fill('CANCELLED'));
    expect(all.filter((r) => r.error?.message.includes('before this target started'))).toHaveLength(3);
  });

  it('a streamed stdin with more targets than parallel is refused: it could not reach the late ones', async () => {
    const client = fakeClient(async function* () {
      yield end(0);
    });
    const stdin = (async function* () {
      yield new Uint8Array(1);
    })();
    await expect(execMany(client, targets(3), ['x'], { parallel: 2, stdin }).results).rejects.toMatchObject({ code: 'INVALID_INPUT' });
  });

  it('a target refused LIMIT_EXCEEDED while a streamed stdin is read is reported not run, never run again with less of the stdin', async () => {
    // `cat > /tmp/app.env`: a command that exits 0 whatever stdin it is given, as the mutation pass's probe used.
    let live = 0;
    const received = new Map<string, number[]>();
    const client = fakeClient(async function* (target, input) {
      if (live >= 1) throw new RpcError('LIMIT_EXCEEDED', 'the identity has 1 exec session');
      live++;
      const bytes: number[] = [];
      for await (const item of input) if ('data' in item) bytes.push(...item.data);
      received.set(target, bytes);
      await tick();
      live--;
      yield end(0);
    });
    const secret = new TextEncoder().encode('DB_PASSWORD=hunter2\n');
    const stdin = (async function* () {
      yield secret;
    })();
    const all = await execMany(client, targets(2), ['sh', '-c', 'cat > /tmp/app.env'], { parallel: 2, stdin }).results;
    const ran = all.filter((r) => r.exitCode === 0);
    expect(ran).toHaveLength(1);
    // The one that ran had all of it; the other is not run, for the caps, and counts 123.
    expect(received.get(ran[0]!.target)).toEqual([...secret]);
    const refused = all.find((r) => r.exitCode === undefined);
    expect(refused?.error?.code).toBe('LIMIT_EXCEEDED');
    expect(received.has(refused!.target)).toBe(false);
    expect(exitCodeOf(all)).toBe(123);
  });

  it('a streamed stdin is read by each target once: a second read fails rather than give an empty stdin', async () => {
    const fan = new StdinFanOut((async function* () {
      yield new Uint8Array([1]);
    })(), ['t']);
    const first = fan.reader('t')[Symbol.asyncIterator]();
    expect((await first.next()).value).toEqual(new Uint8Array([1]));
    fan.leave('t');
    await expect(fan.reader('t')[Symbol.asyncIterator]().next()).rejects.toThrow(/cannot be given twice/);
  });

  it('one target that floods does not hold the others: their frames and ends come within a round of each', async () => {
    let flooded = 0;
    const client = fakeClient(async function* (target, _stdin, signal) {
      if (target === 'h/t0') {
        while (!signal?.aborted) {
          flooded++;
          yield { stream: 'stdout', text: 'y\n'.repeat(1000) };
        }
        throw new RpcError('CANCELLED', 'the call was cancelled by the caller');
      }
      await tick();
      yield { stream: 'stdout', text: `${target} done\n` };
      yield end(3);
    });
    const abort = new AbortController();
    const { events, results } = execMany(client, targets(4), ['x'], { signal: abort.signal });
    results.catch(() => undefined);
    const ends: string[] = [];
    let taken = 0;
    // A slow reader: a turn of its own for every event.
    for await (const event of events) {
      taken++;
      if (!('frame' in event) && event.target !== 'h/t0') ends.push(event.target);
      if (ends.length === 3) break;
      await tick();
      if (taken > 200) break;
    }
    abort.abort();
    expect(ends.sort()).toEqual(['h/t1', 'h/t2', 'h/t3']);
    // Three frames and three ends, each waiting for at most one frame of the flooder per round, and the flooder's first frames.
    expect(taken).toBeLessThan(20);
    // The flooder is held by its reader, not run ahead: at most two of its frames wait beyond those taken.
    expect(flooded - (taken - 6)).toBeLessThanOrEqual(3);
  });

  it('every target reads the same stdin, read once', async () => {
    const chunks = Array.from({ length: 50 }, (_, i) => new Uint8Array([i, i, i]));
    let reads = 0;
    const stdin = (async function* () {
      for (const chunk of chunks) {
        reads++;
        yield chunk;
      }
    })();
    const received = new Map<string, number[]>();
    const client = fakeClient(async function* (target, input) {
      const bytes: number[] = [];
      for await (const item of input) if ('data' in item) bytes.push(...item.data);
      received.set(target, bytes);
      yield end(0);
    });
    const all = await execMany(client, targets(4), ['x'], { stdin }).results;
    expect(exitCodeOf(all)).toBe(0);
    expect(reads).toBe(50);
    for (const target of targets(4)) expect(received.get(target)).toEqual(chunks.flatMap((c) => [...c]));
  });
});

describe('StdinFanOut', () => {
  it('reads the next chunk only when every running target has the last: the slowest reader sets the pace', async () => {
    let reads = 0;
    const source = (async function* () {
      for (let i = 0; i < 100; i++) {
        reads++;
        yield new Uint8Array([i]);
      }
    })();
    const fan = new StdinFanOut(source, ['fast', 'slow']);
    const fast = fan.reader('fast')[Symbol.asyncIterator]();
    const slow = fan.reader('slow')[Symbol.asyncIterator]();
    expect((await fast.next()).value).toEqual(new Uint8Array([0]));
    // fast waits for chunk 1 until slow has taken chunk 0.
    const pending = fast.next();
    await tick();
    expect(reads).toBe(1);
    expect((await slow.next()).value).toEqual(new Uint8Array([0]));
    expect((await pending).value).toEqual(new Uint8Array([1]));
    expect(reads).toBe(2);
  });

  it('reads nothing until every target has started or left, and a target that leaves holds no one', async () => {
    let reads = 0;
    const source = (async function* () {
      for (let i = 0; i < 3; i++) {
        reads++;
        yield new Uint8Array([i]);
      }
    })();
    const fan = new StdinFanOut(source, ['a', 'gone']);
    const a = fan.reader('a')[Symbol.asyncIterator]();
    const first = a.next();
    await tick();
    expect(reads).toBe(0);
    fan.leave('gone');
    const got = [(await first).value, (await a.next()).value, (await a.next()).value];
    expect(got).toEqual([new Uint8Array([0]), new Uint8Array([1]), new Uint8Array([2])]);
    expect((await a.next()).done).toBe(true);
  });
});

describe('exit code and summary', () => {
  const r = (target: string, exitCode?: number, message?: string): TargetResult => ({
    target,
    ...(exitCode === undefined ? { error: { code: 'UNAVAILABLE', message: message ?? '' } } : { exitCode }),
    stdoutBytes: 0,
    stderrBytes: 0,
  });

  it('0 when all exited 0; else the largest, a target that did not run counting 123', () => {
    expect(exitCodeOf([r('a', 0), r('b', 0)])).toBe(0);
    expect(exitCodeOf([r('a', 0), r('b', 3), r('c', 1)])).toBe(3);
    expect(exitCodeOf([r('a', 0), r('b', 3), r('c')])).toBe(123);
    expect(exitCodeOf([r('a', 200), r('c')])).toBe(200);
    expect(exitCodeOf([])).toBe(0);
  });

  it('counts the targets that exited 0 and names the others', () => {
    const results = [...Array.from({ length: 10 }, (_, i) => r(`a/web-${i + 10}`, 0)), r('a/web-2', 3), r('b/web-1', undefined, 'host b is down')];
    expect(summaryOf(results)).toBe('12 targets: 10 exit 0, 1 exit 3 (a/web-2), 1 not run (b/web-1: host b is down)');
    expect(summaryOf([r('b', 2), r('a', 2), r('c', 1)])).toBe('3 targets: 1 exit 1 (c), 2 exit 2 (a, b)');
  });
});
