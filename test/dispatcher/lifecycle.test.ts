import { describe, expect, it } from 'vitest';
import { envelopes, msgpackCodec } from '../../src/protocol/index.js';
import { MemoryConnection } from '../../src/testing/index.js';
import { sampleRegistry } from '../support/sample-ops.js';
import { sleep, until } from '../support/wait.js';

function setup() {
  const { registry, probe } = sampleRegistry();
  const conn = new MemoryConnection({ registry });
  return { conn, client: conn.client, probe };
}

describe('unary lifecycle (spec §11.1, §11.2)', () => {
  it('answers exactly one call.responded and never call.completed', async () => {
    const { client } = setup();
    client.request('u1', 'test/echo', { text: 'hi' });
    const answer = await client.nextFor('u1');
    expect(answer).toEqual({ type: 'call.responded', id: 'u1', payload: { output: { text: 'hi' } } });
    await sleep(30);
    expect(client.framesFor('u1')).toHaveLength(1);
  });

  it('accepts the operation id with a leading slash', async () => {
    const { client } = setup();
    client.request('u2', '/test/echo', { text: 'slash' });
    expect((await client.nextFor('u2')).type).toBe('call.responded');
  });

  it('treats a missing input as null (REQ, §4.1): the handler sees null, not undefined', async () => {
    const { client } = setup();
    client.request('u3', 'test/input-of');
    const e = await client.nextFor('u3');
    expect(e.type === 'call.responded' && e.payload.output).toEqual({ inputWas: 'null' });
  });
});

describe('subscription lifecycle (spec §11.3)', () => {
  it('sends every item in order, then call.completed, then nothing', async () => {
    const { client, probe } = setup();
    client.request('s1', 'test/ticker', { count: 5, intervalMs: 1 });
    await client.next((e) => e.id === 's1' && e.type === 'call.completed');
    const seen = client.framesFor('s1');
    expect(seen.map((e) => e.type)).toEqual([...Array(5).fill('call.responded'), 'call.completed']);
    expect(seen.slice(0, 5).map((e) => (e.type === 'call.responded' ? e.payload.output : null))).toEqual([0, 1, 2, 3, 4].map((n) => ({ n })));
    expect(probe.teardowns).toBe(1);
    await sleep(30);
    expect(client.framesFor('s1')).toHaveLength(6);
  });

  it('a zero-item subscription is just call.completed', async () => {
    const { client } = setup();
    client.request('s0', 'test/ticker', { count: 0 });
    expect((await client.nextFor('s0')).type).toBe('call.completed');
  });

  it('handler error mid-stream: exactly one call.error and nothing after, even from a faulty source', async () => {
    const { client } = setup();
    client.request('f1', 'test/fail-midstream', null);
    await client.next((e) => e.id === 'f1' && e.type === 'call.error');
    await sleep(30);
    const seen = client.framesFor('f1');
    expect(seen.map((e) => e.type)).toEqual(['call.responded', 'call.responded', 'call.error']);
    const last = seen[2]!;
    expect(last.type === 'call.error' && last.payload).toEqual({ code: 'STREAM_BROKE', message: 'broke mid-stream', retryable: false });
  });
});

describe('abort (spec §11.5, §11.6)', () => {
  it('abort during a stream runs the teardown and nothing follows for that id', async () => {
    const { client, probe, conn } = setup();
    client.request('a1', 'test/ticker', { count: 100000, intervalMs: 2 });
    await client.next((e) => e.id === 'a1');
    client.abort('a1');
    await until(() => probe.teardowns === 1, 'teardown');
    const count = client.framesFor('a1').length;
    await sleep(50);
    expect(client.framesFor('a1')).toHaveLength(count);
    expect(client.framesFor('a1').every((e) => e.type === 'call.responded')).toBe(true);
    expect(probe.aborts).toBe(1);
    expect(conn.server.stats.liveCalls).toBe(0);
  });

  it('fires the AbortSignal and the teardown in the same turn the abort is read', async () => {
    const { client, probe, conn } = setup();
    client.request('a2', 'test/ticker', { count: 1000, intervalMs: 50 });
    await until(() => probe.signals.length === 1, 'handler start');
    conn.server.receive(msgpackCodec.encode(envelopes.aborted('a2')));
    // No await between receive() and these checks: cancellation is synchronous.
    expect(probe.signals[0]!.aborted).toBe(true);
    expect(probe.teardowns).toBe(1);
  });

  it('returns an async iterator on abort (its finally block runs)', async () => {
    const { client, probe } = setup();
    client.request('a3', 'test/forever', null);
    await client.next((e) => e.id === 'a3');
    client.abort('a3');
    await until(() => probe.teardowns === 1, 'iterator finally');
    expect(probe.signals[0]!.aborted).toBe(true);
  });

  it('abort of a unary call fires its signal and suppresses the answer', async () => {
    const { client, probe } = setup();
    client.request('a4', 'test/sleep', { ms: 60 });
    await until(() => probe.started === 1, 'start');
    client.abort('a4');
    await until(() => probe.aborts === 1, 'abort');
    await sleep(100);
    expect(client.framesFor('a4')).toHaveLength(0);
  });

  it('abort of an unknown id is a silent no-op, counted, and the connection stays usable', async () => {
    const { client, conn } = setup();
    client.abort('never-used');
    client.request('after', 'test/echo', { text: 'still here' });
    expect((await client.nextFor('after')).type).toBe('call.responded');
    expect(client.framesFor('never-used')).toHaveLength(0);
    expect(conn.server.stats.unknownIdFrames).toBe(1);
    expect(client.isClosed).toBe(false);
  });

  it('abort after completion (the race) is a no-op', async () => {
    const { client, conn } = setup();
    client.request('r1', 'test/ticker', { count: 1, intervalMs: 1 });
    await client.next((e) => e.id === 'r1' && e.type === 'call.completed');
    client.abort('r1');
    await sleep(20);
    expect(client.framesFor('r1')).toHaveLength(2);
    expect(conn.server.stats.unknownIdFrames).toBe(1);
  });

  it('disconnect with 100 live subscriptions runs all 100 teardowns', async () => {
    const { client, probe, conn } = setup();
    for (let i = 0; i < 100; i++) client.request(`d${i}`, 'test/ticker', { count: 1_000_000, intervalMs: 20 });
    await until(() => probe.started === 100, '100 handlers');
    expect(conn.server.stats.liveCalls).toBe(100);
    conn.disconnect();
    expect(probe.teardowns).toBe(100);
    expect(probe.signals.every((s) => s.aborted)).toBe(true);
    expect(conn.server.stats.liveCalls).toBe(0);
  });
});

describe('duplicate id (spec §3.2, §11.6)', () => {
  it('refuses the second request and leaves the first undisturbed', async () => {
    const { client, probe } = setup();
    client.request('dup', 'test/ticker', { count: 4, intervalMs: 10 });
    await client.next((e) => e.id === 'dup');
    client.request('dup', 'test/ticker', { count: 4, intervalMs: 10 });
    const err = await client.next((e) => e.id === 'dup' && e.type === 'call.error');
    expect(err.type === 'call.error' && err.payload.code).toBe('DUPLICATE_CALL_ID');
    await client.next((e) => e.id === 'dup' && e.type === 'call.completed');
    const outputs = client.framesFor('dup').filter((e) => e.type === 'call.responded');
    expect(outputs.map((e) => (e.type === 'call.responded' ? e.payload.output : null))).toEqual([0, 1, 2, 3].map((n) => ({ n })));
    expect(probe.started).toBe(1);
  });

  it('an id may be reused once its call has ended', async () => {
    const { client } = setup();
    client.request('again', 'test/echo', { text: '1' });
    await client.nextFor('again');
    client.request('again', 'test/echo', { text: '2' });
    const second = await client.nextFor('again');
    expect(second.type === 'call.responded' && second.payload.output).toEqual({ text: '2' });
  });
});

describe('deadline (spec §7, §11.7)', () => {
  it('cancels the handler when the deadline passes and answers TIMEOUT, then nothing', async () => {
    const { client, probe } = setup();
    client.request('t1', 'test/ticker', { count: 1_000_000, intervalMs: 10 }, { deadline_ms: 80 });
    const err = await client.next((e) => e.id === 't1' && e.type === 'call.error');
    expect(err.type === 'call.error' && err.payload).toMatchObject({ code: 'TIMEOUT', retryable: true });
    expect(probe.teardowns).toBe(1);
    expect(probe.signals[0]!.aborted).toBe(true);
    const count = client.framesFor('t1').length;
    await sleep(50);
    expect(client.framesFor('t1')).toHaveLength(count);
  });

  it('a unary call that ends before its deadline is unaffected', async () => {
    const { client } = setup();
    client.request('t2', 'test/sleep', { ms: 5 }, { deadline_ms: 1000 });
    const ok = await client.nextFor('t2');
    expect(ok.type === 'call.responded' && ok.payload.output).toBe('slept');
    await sleep(20);
    expect(client.framesFor('t2')).toHaveLength(1);
  });

  it('a unary deadline aborts the handler signal', async () => {
    const { client, probe } = setup();
    client.request('t3', 'test/sleep', { ms: 10_000 }, { deadline_ms: 30 });
    const err = await client.nextFor('t3');
    expect(err.type === 'call.error' && err.payload.code).toBe('TIMEOUT');
    expect(probe.aborts).toBe(1);
  });
});

describe('shutdown', () => {
  it('refuses new calls, lets live ones finish within the grace period, then cancels the rest', async () => {
    const { client, conn, probe } = setup();
    client.request('quick', 'test/sleep', { ms: 20 });
    client.request('slow', 'test/sleep', { ms: 10_000 });
    await until(() => probe.started === 2, 'both started');
    const done = conn.server.shutdown(200);
    client.request('late', 'test/echo', { text: 'x' });
    const late = await client.nextFor('late');
    expect(late.type === 'call.error' && late.payload.code).toBe('UNAVAILABLE');
    expect((await client.nextFor('quick')).type).toBe('call.responded');
    await done;
    const slow = await client.nextFor('slow');
    expect(slow.type === 'call.error' && slow.payload.code).toBe('UNAVAILABLE');
    expect(probe.aborts).toBe(1);
  });
});
