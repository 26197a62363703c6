import { Observable } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { bytesSchema, defineOperation, Registry } from '../../src/dispatcher/index.js';
import { limits } from '../../src/protocol/index.js';
import { MemoryConnection } from '../../src/testing/index.js';
import { liveBytes } from '../support/live-bytes.js';
import { sleep, until } from '../support/wait.js';

const CHUNK = 64 * 1024;
const GIB = 1024 * 1024 * 1024;
const MIB = 1024 * 1024;
const SLACK = 4 * MIB; // the "small constant": codec buffers, closures, bookkeeping

function firehose() {
  const state = { produced: 0 };
  const output = z.object({ data: bytesSchema });
  const registry = new Registry().register(
    defineOperation({
      name: 'fire/iterable',
      kind: 'subscription',
      input: z.null(),
      output,
      handler: () =>
        (async function* () {
          while (state.produced < GIB) {
            state.produced += CHUNK;
            yield { data: new Uint8Array(CHUNK).fill(state.produced & 0xff) };
          }
        })(),
    }),
    defineOperation({
      name: 'fire/observable',
      kind: 'subscription',
      input: z.null(),
      output,
      handler: () =>
        new Observable<{ data: Uint8Array }>((subscriber) => {
          while (!subscriber.closed && state.produced < GIB) {
            state.produced += CHUNK;
            subscriber.next({ data: new Uint8Array(CHUNK) });
          }
        }),
    }),
  );
  return { registry, state };
}

describe('backpressure towards a slow transport (spec §8)', () => {
  it('a 1 GiB async-iterable stream against a transport that accepts nothing for 2 s stays within the bound', async () => {
    expect((globalThis as { gc?: unknown }).gc, 'tests run with --expose-gc').toBeTypeOf('function');
    const { registry, state } = firehose();
    const conn = new MemoryConnection({ registry });
    conn.pause();
    const before = liveBytes();
    conn.client.request('big', 'fire/iterable', null);
    await sleep(2000);
    const during = liveBytes();
    const extra = during - before;
    // The producer was not pulled past the buffer: at most the bound plus one chunk in flight.
    expect(state.produced).toBeLessThanOrEqual(limits.maxBufferedBytesPerCall + 2 * CHUNK);
    expect(extra).toBeLessThan(limits.maxBufferedBytesPerCall + SLACK);
    // Room again: it flows, then an abort stops it.
    const producedWhilePaused = state.produced;
    conn.resume();
    await until(() => state.produced > producedWhilePaused + 4 * MIB, 'flow after resume');
    conn.client.abort("big");
    await until(() => conn.server.stats.liveCalls === 0, 'call ended');
    console.log(`iterable: ${(extra / MIB).toFixed(2)} MiB extra while paused; ${(producedWhilePaused / MIB).toFixed(2)} MiB produced`);
  });

  it('a push-based Observable that overflows ends with SLOW_CONSUMER and memory stays bounded', async () => {
    const { registry, state } = firehose();
    const conn = new MemoryConnection({ registry, limits: { maxBufferedBytesPerCall: 2 * MIB } });
    conn.pause();
    const before = liveBytes();
    conn.client.request('push', 'fire/observable', null);
    await sleep(2000);
    const extra = liveBytes() - before;
    expect(state.produced).toBeLessThan(2 * MIB + 2 * CHUNK);
    expect(extra).toBeLessThan(2 * MIB + SLACK);
    expect(conn.server.stats.liveCalls).toBe(0);
    conn.resume();
    const last = await conn.client.next((e) => e.id === 'push' && e.type === 'call.error');
    expect(last.type === 'call.error' && last.payload).toMatchObject({ code: 'SLOW_CONSUMER', retryable: true });
    console.log(`observable: ${(extra / MIB).toFixed(2)} MiB extra while paused`);
  });
});

describe('fairness (spec §5.2, WS-7)', () => {
  it('streams that never wait share one budget per turn of the event loop, however many there are', async () => {
    const STREAMS = 200;
    let taken = 0;
    const registry = new Registry().register(
      defineOperation({
        name: 'tiny/forever',
        kind: 'subscription',
        input: z.null(),
        output: z.number(),
        handler: () =>
          (async function* () {
            for (;;) yield ++taken;
          })(),
      }),
    );
    const conn = new MemoryConnection({ registry });
    for (let i = 0; i < STREAMS; i++) conn.client.request(`s${i}`, 'tiny/forever', null);
    await until(() => taken > 50_000, 'streams running');
    // Items taken between two turns of the event loop (a turn: all the sockets and timers
    // wait for it). Each waiting stream takes one item when it is resumed, and the rest
    // share a budget of a few hundred; a budget of 32 per stream took 6,400 here.
    const perTurn: number[] = [];
    for (let i = 0; i < 50; i++) {
      const from = taken;
      await new Promise((resolve) => setImmediate(resolve));
      perTurn.push(taken - from);
    }
    expect(Math.max(...perTurn)).toBeGreaterThan(0);
    expect(Math.max(...perTurn)).toBeLessThan(STREAMS + 2 * 256 + 100);
    for (let i = 0; i < STREAMS; i++) conn.client.abort(`s${i}`);
    await until(() => conn.server.stats.liveCalls === 0, 'streams aborted');
  });

  /** `count` streams at once, stream n's items made by `items(n, take)`, where `take()` counts one for it. */
  async function numberedStreams(count: number, items: (n: number, take: () => number) => AsyncGenerator<number>) {
    const takenBy = new Array<number>(count).fill(0);
    const registry = new Registry().register(
      defineOperation({ name: 'tiny/numbered', kind: 'subscription', input: z.number(), output: z.number(), handler: (n) => items(n, () => ++takenBy[n]!) }),
    );
    const conn = new MemoryConnection({ registry });
    for (let i = 0; i < count; i++) conn.client.request(`s${i}`, 'tiny/numbered', i);
    const abortAll = async (): Promise<void> => {
      for (let i = 0; i < count; i++) conn.client.abort(`s${i}`);
      await until(() => conn.server.stats.liveCalls === 0, 'streams aborted');
    };
    return { takenBy, abortAll };
  }

  it('streams past the turn\'s budget wait in line: each gets its items in turn, none is left behind', async () => {
    const { takenBy, abortAll } = await numberedStreams(2000, async function* (_n, take) {
      for (;;) yield take();
    });
    await until(() => takenBy.every((n) => n > 0), 'every stream started');
    // From here every stream waits in line for its turn: 2,000 of them, 256 a turn, so
    // each one's next item comes within about 8 turns, and all get about as many.
    const before = [...takenBy];
    for (let turn = 0; turn < 40; turn++) await new Promise((resolve) => setImmediate(resolve));
    const gained = takenBy.map((n, i) => n - before[i]!);
    expect(Math.min(...gained)).toBeGreaterThan(0);
    expect(Math.max(...gained)).toBeLessThan(4 * Math.max(1, Math.min(...gained)) + 4);
    await abortAll();
  });

  it('a stream left waiting in line gets its turn even when no other stream joins the line after it', async () => {
    // Two items, then a wait that never ends: a stream woken for its second item does not come back to the line.
    const { takenBy, abortAll } = await numberedStreams(2000, async function* (_n, take) {
      yield take();
      yield take();
      await new Promise(() => undefined);
    });
    await until(() => takenBy.every((n) => n === 2), 'every stream took both its items');
    await abortAll();
  });

  it('a stream that never waits does not starve other calls or timers on the connection', async () => {
    const { registry, state } = firehose();
    registry.register(defineOperation({ name: 'quick', kind: 'query', input: z.null(), output: z.string(), handler: () => 'fast' }));
    const conn = new MemoryConnection({ registry });
    conn.client.request('hose', 'fire/iterable', null);
    await until(() => state.produced > 4 * MIB, 'stream running');
    const started = state.produced;
    conn.client.request('q', 'quick', null);
    const answer = await conn.client.nextFor('q');
    expect(answer.type).toBe('call.responded');
    // The answer came while the stream was still going, long before its 1 GiB.
    expect(state.produced - started).toBeLessThan(256 * MIB);
    conn.client.abort('hose');
    await until(() => conn.server.stats.liveCalls === 0, 'stream aborted');
  });
});
