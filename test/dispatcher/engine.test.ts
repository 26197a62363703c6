import { Observable } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createDispatcher, defineOperation, OutboundGauge, Registry, type Operation, type FrameConnection, type FrameTransport } from '../../src/dispatcher/index.js';
import { codecs, envelopes, RpcError, type Envelope } from '../../src/protocol/index.js';
import { InProcessClient, MemoryConnection } from '../../src/testing/index.js';
import { sleep, until } from '../support/wait.js';

/**
 * The call engine without frames (CallTable.start, through the in-process adapter),
 * and the connection's one count of outbound bytes (BP-4) that every frame joins.
 */
function operations() {
  const state = { pulled: 0, cancelled: 0, inputs: [] as unknown[] };
  const ops: Operation[] = [
    defineOperation({ name: 't/echo', kind: 'query', input: z.object({ text: z.string() }), output: z.object({ text: z.string() }), handler: (input) => input }),
    defineOperation({
      name: 't/slow',
      kind: 'query',
      input: z.null(),
      output: z.null(),
      handler: (_input, ctx) =>
        new Promise<null>((resolve) => {
          ctx.signal.addEventListener('abort', () => state.cancelled++);
          setTimeout(() => resolve(null), 60_000).unref();
        }),
    }),
    defineOperation({
      name: 't/count',
      kind: 'subscription',
      input: z.object({ to: z.number().int() }),
      output: z.object({ n: z.number().int(), pad: z.string() }),
      handler: ({ to }, ctx) =>
        (async function* () {
          ctx.signal.addEventListener('abort', () => state.cancelled++);
          for (let n = 1; n <= to; n++) {
            state.pulled++;
            yield { n, pad: 'x'.repeat(1024) };
          }
        })(),
    }),
    defineOperation({
      name: 't/fail',
      kind: 'subscription',
      input: z.null(),
      output: z.null(),
      errors: { NO_SUCH_THING: { description: 'a declared error' } },
      handler: () =>
        new Observable<null>((subscriber) => {
          subscriber.next(null);
          subscriber.error(new RpcError('NO_SUCH_THING', 'as declared'));
        }),
    }),
    defineOperation({
      name: 't/idle',
      kind: 'subscription',
      input: z.null(),
      output: z.null(),
      handler: () => new Observable<null>(() => undefined),
    }),
    defineOperation({
      name: 't/sum',
      kind: 'mutation',
      input: z.null(),
      output: z.object({ sum: z.number() }),
      inputStream: z.object({ n: z.number() }),
      handler: async (_input, ctx) => {
        let sum = 0;
        for await (const item of ctx.input!) {
          state.inputs.push(item);
          sum += (item as { n: number }).n;
        }
        return { sum };
      },
    }),
  ];
  return { registry: new Registry().register(...ops), state };
}

async function collect(stream: AsyncIterable<unknown>): Promise<unknown[]> {
  const items: unknown[] = [];
  for await (const item of stream) items.push(item);
  return items;
}

describe('the call engine in process (no frames, no codec)', () => {
  it('answers a unary call, and refuses as the wire would: NOT_FOUND, INVALID_INPUT, INVALID_OPERATION_TYPE', async () => {
    const { registry } = operations();
    const client = new InProcessClient(createDispatcher({ registry }));
    await expect(client.call('t/echo', { text: 'hi' })).resolves.toEqual({ text: 'hi' });
    await expect(client.call('t/nope', null)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(client.call('t/echo', { text: 3 })).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    await expect(client.call('t/count', { to: 1 })).rejects.toMatchObject({ code: 'INVALID_OPERATION_TYPE' });
  });

  it('streams items in order then ends; a declared error reaches the caller as it is', async () => {
    const { registry } = operations();
    const client = new InProcessClient(createDispatcher({ registry }));
    const items = (await collect(client.stream('t/count', { to: 5 }))) as { n: number }[];
    expect(items.map((i) => i.n)).toEqual([1, 2, 3, 4, 5]);
    const seen: unknown[] = [];
    await expect(
      (async () => {
        for await (const item of client.stream('t/fail', null)) seen.push(item);
      })(),
    ).rejects.toMatchObject({ code: 'NO_SUCH_THING', message: 'as declared' });
    expect(seen).toEqual([null]);
  });

  it('a deadline ends the call with TIMEOUT and cancels its handler (DL-1, ABT-1)', async () => {
    const { registry, state } = operations();
    const client = new InProcessClient(createDispatcher({ registry }));
    await expect(client.call('t/slow', null, { deadlineMs: 50 })).rejects.toMatchObject({ code: 'TIMEOUT' });
    expect(state.cancelled).toBe(1);
  });

  it('a consumer that stops early cancels the call; one that stops pulling stops the pull source (BP-1)', async () => {
    const { registry, state } = operations();
    const dispatcher = createDispatcher({ registry, limits: { maxBufferedBytesPerCall: 64 * 1024 } });
    const client = new InProcessClient(dispatcher);
    for await (const item of client.stream('t/count', { to: 1_000_000 })) {
      if ((item as { n: number }).n === 3) break;
    }
    await until(() => state.cancelled === 1, 'the handler cancelled');
    expect([...dispatcher.connections].reduce((n, c) => n + c.stats.liveCalls, 0)).toBe(0);

    state.pulled = 0;
    const stream = client.stream('t/count', { to: 1_000_000 });
    await sleep(300);
    // The items nobody took are bounded by the call's buffer, not by the source.
    expect(state.pulled).toBeGreaterThan(0);
    expect(state.pulled).toBeLessThanOrEqual(8);
    stream.abort();
  });

  it("feeds an operation's input stream, with the call's own checks (IN-1)", async () => {
    const { registry, state } = operations();
    const client = new InProcessClient(createDispatcher({ registry }));
    const stream = client.stream('t/sum', null, {}, 'unary');
    stream.input({ n: 2 });
    stream.input({ n: 5 });
    stream.end();
    expect(await collect(stream)).toEqual([{ sum: 7 }]);
    expect(state.inputs).toEqual([{ n: 2 }, { n: 5 }]);
    const bad = client.stream('t/sum', null, {}, 'unary');
    bad.input({ n: 'seven' });
    await expect(collect(bad)).rejects.toMatchObject({ code: 'INVALID_INPUT' });
  });

  it('shares the per-identity caps with every other connection of the dispatcher (LIM-3)', async () => {
    const { registry } = operations();
    const dispatcher = createDispatcher({ registry, limits: { maxCallsPerIdentity: 2 } });
    const a = new InProcessClient(dispatcher, { subject: 'alice', scopes: ['*'] });
    const b = new InProcessClient(dispatcher, { subject: 'alice', scopes: ['*'] });
    const first = a.stream('t/idle', null);
    const second = b.stream('t/idle', null);
    await expect(collect(a.stream('t/idle', null))).rejects.toMatchObject({ code: 'LIMIT_EXCEEDED' });
    first.abort();
    second.abort();
    await expect(b.call('t/echo', { text: 'room again' })).resolves.toEqual({ text: 'room again' });
  });
});

describe("the connection's outbound bytes have one count (BP-4)", () => {
  it('refusals of duplicate ids fill the same bound as output: a new stream waits until the peer reads', async () => {
    const { registry, state } = operations();
    const conn = new MemoryConnection({ registry, limits: { maxOutboundBytesPerConnection: 32 * 1024 } });
    conn.client.request('live', 't/idle', null);
    await sleep(20);
    conn.pause();
    // Each refusal names the live id; together they hold more than the connection's bound.
    for (let i = 0; i < 600; i++) conn.client.request('live', 't/idle', null);
    await until(() => conn.heldFrames >= 600, 'the refusals are held by the transport');
    conn.client.request('fresh', 't/count', { to: 200 });
    await sleep(300);
    expect(state.pulled, 'a congested connection pulls no source').toBe(0);
    conn.resume();
    await conn.client.next((e) => e.id === 'fresh' && e.type === 'call.completed', 10_000);
    expect(state.pulled).toBe(200);
    expect(conn.client.framesFor('live').filter((e) => e.type === 'call.error')).toHaveLength(600);
  });
});

/** A connection whose peer takes one frame per turn of the event loop, once resumed: a slow, steady reader. */
class TrickleTransport implements FrameTransport {
  readonly codec = codecs.msgpack;
  readonly taken: Envelope[] = [];
  server!: FrameConnection;
  private readonly queue: { frame: Uint8Array; done: () => void }[] = [];
  private readonly gauge: OutboundGauge;
  constructor(bound: number) {
    this.gauge = new OutboundGauge(bound, () => this.server.drained());
  }
  readonly congested = (): boolean => this.gauge.congested;
  send(frame: Uint8Array): Promise<void> {
    this.gauge.add(frame.byteLength);
    return new Promise((done) => this.queue.push({ frame, done }));
  }
  close(): void {}
  resume(): void {
    const step = (): void => {
      const next = this.queue.shift();
      if (next) {
        this.gauge.taken(next.frame.byteLength);
        this.taken.push(this.codec.decode(next.frame) as Envelope);
        next.done();
      }
      setImmediate(step);
    };
    step();
  }
}

describe('a call waiting for room always hears of it', () => {
  it('calls full of their own frames while the connection is congested all finish once a slow reader drains them (BP-1, BP-4)', async () => {
    const { registry } = operations();
    const dispatcher = createDispatcher({ registry, limits: { maxBufferedBytesPerCall: 8 * 1024, maxOutboundBytesPerConnection: 32 * 1024 } });
    const transport = new TrickleTransport(32 * 1024);
    transport.server = dispatcher.open(transport);
    const ids = ['a', 'b', 'c', 'd', 'e'];
    // One after another: the first calls fill their own buffers and wait for them, and only
    // then does the connection congest; a call that waits for its own room waits on no list.
    for (const id of ids) {
      transport.server.receive(codecs.msgpack.encode(envelopes.requested(id, { operationId: 't/count', input: { to: 60 } })));
      await sleep(50);
    }
    expect(transport.congested()).toBe(true);
    transport.resume();
    await until(() => ids.every((id) => transport.taken.some((e) => e.id === id && e.type === 'call.completed')), 'every stream completed', 10_000);
    for (const id of ids) expect(transport.taken.filter((e) => e.id === id && e.type === 'call.responded')).toHaveLength(60);
  });
});

describe('calls whose output waits for credit', () => {
  it('count against maxCallsInFlight until their frames leave, and hear nothing after their terminal event', async () => {
    const { registry } = operations();
    const conn = new MemoryConnection({ registry, limits: { maxCallsInFlight: 2 } });
    // Credit for one frame each: both streams end at once, their other frames held for credit.
    conn.client.request('x', 't/count', { to: 5 }, { credit: 1 });
    conn.client.request('y', 't/count', { to: 5 }, { credit: 1 });
    await until(() => conn.server.stats.liveCalls === 0, 'both streams ended, frames held');
    conn.client.request('z', 't/echo', { text: 'over' });
    expect(await conn.client.nextFor('z')).toMatchObject({ type: 'call.error', payload: { code: 'LIMIT_EXCEEDED' } });
    // A malformed frame about an ended call is no reason to send it anything more (ERR-2).
    conn.client.sendValue({ type: 'call.credit', id: 'x', payload: { bytes: 'lots' } });
    conn.client.sendValue(envelopes.credit('x', 1_000_000));
    conn.client.sendValue(envelopes.credit('y', 1_000_000));
    await conn.client.next((e) => e.id === 'x' && e.type === 'call.completed');
    await conn.client.next((e) => e.id === 'y' && e.type === 'call.completed');
    expect(conn.client.framesFor('x').map((e) => e.type)).toEqual(['call.credit', ...Array(5).fill('call.responded'), 'call.completed']);
    conn.client.request('z2', 't/echo', { text: 'room again' });
    expect(await conn.client.nextFor('z2')).toMatchObject({ type: 'call.responded', payload: { output: { text: 'room again' } } });
  });
});
