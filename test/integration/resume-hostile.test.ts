import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Observable } from 'rxjs';
import { z } from 'zod';
import { connect } from '../../src/client-node/index.js';
import { defineOperation } from '../../src/dispatcher/index.js';
import { rawConnect } from '../../src/conformance/raw-connection.js';
import type { RawPeer } from '../../src/conformance/raw-peer.js';
import type { Envelope } from '../../src/protocol/index.js';
import { startServer, type RunningServer } from '../../src/server/index.js';
import { liveBytes } from '../support/live-bytes.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { sleep, until } from '../support/wait.js';

/**
 * §4.9 against hostile and careless callers, over real WebSockets with the raw peer:
 * whatever order a caller does things in, a call it gave up is gone, a call it still
 * reads is never dropped, and what the server keeps for it is bounded.
 */
describe('resumable calls against hostile callers', () => {
  let server: RunningServer;
  const peers: RawPeer[] = [];
  /** The server's cap, long enough for a test's steps; calls that must outlive their grace ask less. */
  const MAX_RESUME_MS = 30_000;
  const SHORT_GRACE_MS = 300;
  const CALLS_PER_IDENTITY = 16;

  beforeAll(async () => {
    server = await startServer({ port: 0, webTransportPort: 0, docker: false, http3: false, conformance: true, limits: { maxResumeMs: MAX_RESUME_MS, maxCallsPerIdentity: CALLS_PER_IDENTITY } });
  });
  afterAll(async () => {
    await Promise.all(peers.map((p) => p.close()));
    await server.close();
  });

  async function peer(): Promise<RawPeer> {
    const p = await rawConnect(server.wsUrl, { codec: 'msgpack' });
    peers.push(p);
    return p;
  }

  /** Starts a resumable call and returns its token once the callee has offered one. */
  async function resumable(p: RawPeer, id: string, operationId: string, input: unknown, credit = 1 << 20, graceMs = MAX_RESUME_MS): Promise<string> {
    p.request(id, operationId, input, { credit, resume: { grace_ms: graceMs } });
    const offer = await p.next((e) => e.id === id && e.type === 'call.resumable');
    return (offer.payload as { token: string }).token;
  }

  const resume = (p: RawPeer, id: string, token: string, seq = 0, credit = 1 << 20): void =>
    p.sendValue({ type: 'call.resume', id, payload: { token, seq, credit } });

  /** A round trip on `p`: everything it sent before has been handled. */
  async function roundTrip(p: RawPeer): Promise<void> {
    const id = `rt-${Math.random()}`;
    p.request(id, 'conformance/echo', { value: 1 });
    await p.next((e) => e.id === id && e.type === 'call.responded');
  }

  const answerTo = (p: RawPeer, id: string): Promise<Envelope> => p.next((e) => e.id === id && (e.type === 'call.resumed' || e.type === 'call.error'));

  it('a call its caller aborted cannot be resumed: the token dies with it (RSM-4, ABT-2)', async () => {
    const a = await peer();
    const token = await resumable(a, 'ab', 'conformance/hold', { tag: 'hostile-abort' });
    await a.next((e) => e.id === 'ab' && e.type === 'call.responded');
    a.abort('ab');
    await roundTrip(a);
    expect(server.resumable.size).toBe(0);
    const b = await peer();
    resume(b, 'ab', token);
    expect(await answerTo(b, 'ab')).toMatchObject({ type: 'call.error', payload: { code: 'NOT_FOUND' } });
  });

  it('a call whose connection closed cleanly cannot be resumed (RSM-6)', async () => {
    const a = await peer();
    const token = await resumable(a, 'cl', 'conformance/hold', { tag: 'hostile-close' });
    await a.next((e) => e.id === 'cl' && e.type === 'call.responded');
    const open = server.connections().size;
    await a.close();
    await until(() => server.connections().size === open - 1, 'the closed connection gone');
    expect(server.resumable.size).toBe(0);
    const b = await peer();
    resume(b, 'cl', token);
    expect(await answerTo(b, 'cl')).toMatchObject({ type: 'call.error', payload: { code: 'NOT_FOUND' } });
  });

  it('a caller still connected but slow to read gets the tail and the terminal event, however long after the end (RSM-8)', async () => {
    const a = await peer();
    // A 1-byte window: one item per grant, so the call ends with most of its items unsent.
    await resumable(a, 'slow', 'conformance/count', { count: 30 }, 1, SHORT_GRACE_MS);
    const first = await a.next((e) => e.id === 'slow' && e.type === 'call.responded');
    expect(first.payload).toMatchObject({ output: { n: 0 }, seq: 1 });
    await sleep(SHORT_GRACE_MS * 3);
    a.sendValue({ type: 'call.credit', id: 'slow', payload: { bytes: 1 << 20, seq: 1 } });
    const rest: unknown[] = [];
    for (;;) {
      const e = await a.next((f) => f.id === 'slow' && f.type !== 'call.credit');
      if (e.type !== 'call.responded') {
        expect(e.type).toBe('call.completed');
        break;
      }
      rest.push((e.payload as { output: { n: number } }).output.n);
    }
    expect(rest).toEqual(Array.from({ length: 29 }, (_, n) => n + 1));
  });

  /** Starts `count` resumable calls that end at once, and waits for each one's terminal event, which it never acknowledges. */
  async function endedAndKept(p: RawPeer, prefix: string, count: number, graceMs = MAX_RESUME_MS): Promise<void> {
    for (let i = 0; i < count; i++) p.request(`${prefix}${i}`, 'conformance/count', { count: 1 }, { credit: 1 << 16, resume: { grace_ms: graceMs } });
    for (let i = 0; i < count; i++) await p.next((e) => e.id === `${prefix}${i}` && e.type === 'call.completed');
  }

  const echo = async (p: RawPeer, id: string): Promise<Envelope> => {
    p.request(id, 'conformance/echo', { value: id });
    return p.next((e) => e.id === id && (e.type === 'call.responded' || e.type === 'call.error'));
  };

  it("ended calls kept for a caller that never lets them go hold their identity's places until forgotten: their number is bounded (LIM-3, RSM-8)", async () => {
    await until(() => server.resumable.size === 0, 'the earlier tests forgotten');
    const a = await peer();
    await endedAndKept(a, 'kept', CALLS_PER_IDENTITY);
    expect(server.resumable.size).toBe(CALLS_PER_IDENTITY);
    expect(await echo(a, 'over')).toMatchObject({ type: 'call.error', payload: { code: 'LIMIT_EXCEEDED' } });
    for (let i = 0; i < CALLS_PER_IDENTITY; i++) a.abort(`kept${i}`);
    expect(await echo(a, 'freed')).toMatchObject({ type: 'call.responded' });
    expect(server.resumable.size).toBe(0);
  });

  it('so do those of a lost connection, until their grace ends (LIM-3, RSM-6)', async () => {
    const a = await peer();
    await endedAndKept(a, 'lost', CALLS_PER_IDENTITY, SHORT_GRACE_MS);
    await a.drop();
    const b = await peer();
    expect(await echo(b, 'over')).toMatchObject({ type: 'call.error', payload: { code: 'LIMIT_EXCEEDED' } });
    await until(() => server.resumable.size === 0, 'the lost calls forgotten after their grace');
    expect(await echo(b, 'freed')).toMatchObject({ type: 'call.responded' });
  });

  it('a clean close while output flows ends the call at once, never detaches it (RSM-6)', async () => {
    const open = server.connections().size;
    const a = await peer();
    await resumable(a, 'flow', 'conformance/flood', { items: 1e9, itemBytes: 100, mode: 'iterable' });
    // Acknowledged as it arrives, so the call's output never stops while the close crosses it.
    for (let n = 1; n <= 2000; n++) {
      const item = await a.next((e) => e.id === 'flow' && e.type === 'call.responded');
      if (n % 100 === 0) a.sendValue({ type: 'call.credit', id: 'flow', payload: { bytes: 1 << 20, seq: (item.payload as { seq: number }).seq } });
    }
    await a.close();
    await until(() => server.connections().size === open, 'the closed connection gone');
    expect(server.resumable.detached).toBe(0);
    expect(server.resumable.size).toBe(0);
  });

  it('a call taken back and forth between two live connections 100 times: every item once, in order, each connection told it lost the call, and nothing left behind (RSM-5, RSM-10)', async () => {
    const sides = [await peer(), await peer()];
    const token = await resumable(sides[0]!, 'pp', 'conformance/count', { count: 1_000_000, intervalMs: 1 });
    /** One connection's hold of the call: it took the call up after item `after`, and received `items` there. */
    interface Tenure {
      readonly side: RawPeer;
      readonly after: number;
      readonly items: { seq: number; n: number }[];
    }
    const tenures: Tenure[] = [{ side: sides[0]!, after: 0, items: [] }];
    const item = (e: Envelope): { seq: number; n: number } => ({ seq: (e.payload as { seq: number }).seq, n: (e.payload as { output: { n: number } }).output.n });
    /** Reads the tenure's frames until one more item has come, or (`toEnd`) until the connection hears it lost the call. */
    const read = async (tenure: Tenure, toEnd: boolean): Promise<void> => {
      for (;;) {
        const e = await tenure.side.next((f) => f.id === 'pp');
        if (e.type === 'call.responded') {
          tenure.items.push(item(e));
          if (!toEnd) return;
        } else if (e.type === 'call.error') {
          expect(toEnd, `an error while the connection still held the call: ${JSON.stringify(e.payload)}`).toBe(true);
          expect(e.payload).toMatchObject({ code: 'RESUMED_ELSEWHERE', retryable: false });
          return;
        }
      }
    };
    for (let round = 1; round <= 100; round++) {
      const from = tenures.at(-1)!;
      const to = sides[round % 2]!;
      await read(from, false);
      const after = from.items.at(-1)!.seq;
      resume(to, 'pp', token, after);
      expect(await answerTo(to, 'pp')).toMatchObject({ type: 'call.resumed' });
      // What the old connection received before the resume took the call, then its clear end (RSM-10).
      await read(from, true);
      tenures.push({ side: to, after, items: [] });
    }
    const final = tenures.at(-1)!;
    while ((final.items.at(-1)?.seq ?? 0) < final.after + 5) await read(final, false);
    // Within one connection's hold, each item once and none missing, from the item after its resume point.
    let duplicates = 0;
    for (const tenure of tenures) {
      const seqs = tenure.items.map((i) => i.seq);
      duplicates += seqs.length - new Set(seqs).size;
      expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, k) => tenure.after + 1 + k));
    }
    expect(duplicates).toBe(0);
    // What a caller keeps of each hold (up to where the next one took the call up), joined: the call's items from the first, each once.
    const kept = tenures.flatMap((tenure, i) => tenure.items.filter((it) => i === tenures.length - 1 || it.seq <= tenures[i + 1]!.after).map((it) => it.n));
    const total = final.items.at(-1)!.seq;
    expect(kept).toEqual(Array.from({ length: total }, (_, n) => n));
    final.side.abort('pp');
    await roundTrip(final.side);
    expect(server.resumable.size).toBe(0);
    expect(server.resumable.budget.bytes).toBe(0);
    expect(server.resumable.budget.waiting).toBe(0);
  });

  it('a resume after an item the callee never produced is UNAVAILABLE, not retryable, and ends the call; one at the last item is taken up (RSM-5)', async () => {
    const a = await peer();
    const past = await resumable(a, 'past', 'conformance/hold', { tag: 'hostile-past' });
    const last = await resumable(a, 'last', 'conformance/hold', { tag: 'hostile-last' });
    for (const id of ['past', 'last']) expect((await a.next((e) => e.id === id && e.type === 'call.responded')).payload).toMatchObject({ seq: 1 });
    await a.drop();
    await until(() => server.resumable.detached === 2, 'both calls detached');
    const b = await peer();
    // One past the last item: nothing after it can ever be given exactly, so the caller's position is a lie.
    resume(b, 'past', past, 2);
    expect(await answerTo(b, 'past')).toMatchObject({ type: 'call.error', payload: { code: 'UNAVAILABLE', retryable: false, message: expect.stringMatching(/after item 2 is no longer kept/) } });
    resume(b, 'past', past, 1);
    expect(await answerTo(b, 'past')).toMatchObject({ type: 'call.error', payload: { code: 'NOT_FOUND' } });
    resume(b, 'last', last, 1);
    expect(await answerTo(b, 'last')).toMatchObject({ type: 'call.resumed' });
    b.abort('last');
    await roundTrip(b);
    expect(server.resumable.size).toBe(0);
  });

  it('a resume on the connection the call is live on is DUPLICATE_CALL_ID, one naming another id is NOT_FOUND, and callee events from the caller are ignored (RSM-4, DIR-1): the call runs on undisturbed', async () => {
    const a = await peer();
    const token = await resumable(a, 'dup', 'conformance/count', { count: 1_000_000, intervalMs: 2 });
    resume(a, 'dup', token);
    expect(await answerTo(a, 'dup')).toMatchObject({ type: 'call.error', payload: { code: 'DUPLICATE_CALL_ID' } });
    resume(a, 'other-id', token);
    expect(await answerTo(a, 'other-id')).toMatchObject({ type: 'call.error', payload: { code: 'NOT_FOUND' } });
    a.sendValue({ type: 'call.resumed', id: 'dup', payload: { input_seq: 0, input_credit: 1 << 30 } });
    a.sendValue({ type: 'call.resumable', id: 'dup', payload: { token: 'mine-now', grace_ms: 1 } });
    await roundTrip(a);
    const seqs = (): number[] => a.framesFor('dup').flatMap((e) => (e.type === 'call.responded' ? [(e.payload as { seq: number }).seq] : []));
    const before = seqs().length;
    await a.next((e) => e.id === 'dup' && e.type === 'call.responded' && (e.payload as { seq: number }).seq > before + 3);
    expect(seqs()).toEqual(Array.from({ length: seqs().length }, (_, n) => n + 1));
    expect(a.framesFor('dup').filter((e) => e.type === 'call.error')).toHaveLength(1); // the DUPLICATE_CALL_ID beside it, nothing more
    a.abort('dup');
  });

  it('the SDK: a call aborted while its connection is known lost is aborted at the server once a connection is up, not left to its grace (RSM-6)', async () => {
    const proxy = await new TcpProxy().start(Number(new URL(server.wsUrl).port));
    const client = await connect(proxy.via(server.wsUrl), { codec: 'msgpack', resume: { graceMs: MAX_RESUME_MS } });
    const abort = new AbortController();
    // The first dial waits at least 50 ms: the abort comes before it.
    client.on('reconnecting', () => abort.abort());
    const kept = server.resumable.size;
    try {
      let seen = 0;
      const outcome = (async () => {
        for await (const _item of client.iterate('conformance/count', { count: 1_000_000, intervalMs: 5 }, { signal: abort.signal })) {
          if (++seen === 3) proxy.cut();
        }
      })().catch((error: unknown) => (error as { code?: string }).code);
      expect(await outcome).toBe('CANCELLED');
      await until(() => server.resumable.size === kept, 'the aborted call gone at the server', 10_000);
    } finally {
      await client.close();
      await proxy.stop();
    }
  });

  it('the SDK: a client closed while it reconnects fails the calls it was taking up, never leaves their consumers waiting', async () => {
    const proxy = await new TcpProxy().start(Number(new URL(server.wsUrl).port));
    const client = await connect(proxy.via(server.wsUrl), { codec: 'msgpack', resume: { graceMs: MAX_RESUME_MS } });
    const reconnecting = new Promise<void>((resolve) => client.on('reconnecting', () => resolve()));
    let seen = 0;
    const outcome = (async () => {
      for await (const _item of client.iterate('conformance/count', { count: 1_000_000, intervalMs: 5 })) {
        // The relay stops taking new connections too: the client dials in vain until it is closed.
        if (++seen === 3) void proxy.stop();
      }
      return 'completed';
    })().catch((error: unknown) => (error as { code?: string }).code ?? String(error));
    await reconnecting;
    await client.close();
    expect(await Promise.race([outcome, sleep(3000).then(() => 'still waiting')])).toBe('CANCELLED');
  });
});

describe('the replay budget against a caller that churns calls while it is full', () => {
  let server: RunningServer;
  beforeAll(async () => {
    server = await startServer({ port: 0, webTransportPort: 0, docker: false, http3: false, conformance: true, limits: { maxReplayBytesPerIdentity: 64 * 1024 } });
  });
  afterAll(() => server.close());

  it('a call that ended while waiting for replay room is not kept waiting for it (RSM-3)', async () => {
    const p = await rawConnect(server.wsUrl, { codec: 'msgpack' });
    try {
      const flood = (id: string): void => p.request(id, 'conformance/flood', { items: 1e9, itemBytes: 1000, mode: 'iterable' }, { credit: 1 << 30, resume: { grace_ms: 5000 } });
      // Never acknowledged: it fills its identity's budget, and waits.
      flood('fill');
      await until(() => server.resumable.budget.bytes >= 64 * 1024, "the identity's budget full");
      for (let i = 0; i < 50; i++) {
        flood(`churn${i}`);
        await p.next((e) => e.id === `churn${i}` && e.type === 'call.resumable');
        p.abort(`churn${i}`);
      }
      await until(() => server.resumable.size === 1, 'the churned calls forgotten');
      // Only the call that still runs waits; the 50 that ended hold nothing, not even a place in line.
      expect(server.resumable.budget.waiting).toBe(1);
      p.abort('fill');
      await until(() => server.resumable.size === 0, 'every call forgotten');
      expect(server.resumable.budget.waiting).toBe(0);
    } finally {
      await p.close();
    }
  });
});

describe('the memory of detached calls', () => {
  const MIB = 1024 * 1024;
  const SLACK = 6 * MIB; // codec buffers, closures, bookkeeping
  let server: RunningServer;
  beforeAll(async () => {
    server = await startServer({ port: 0, webTransportPort: 0, docker: false, http3: false, conformance: true });
  });
  afterAll(() => server.close());

  it('is about the replay bytes it counts (RSM-3): an output is kept once, not beside its encoding', async () => {
    const calls = 24;
    const p = await rawConnect(server.wsUrl, { codec: 'msgpack' });
    const before = liveBytes();
    // A 1-byte window: one item reaches the caller, the rest of each call's replay stays at the server.
    for (let i = 0; i < calls; i++) p.request(`m${i}`, 'conformance/flood', { items: 1e9, itemBytes: 4000, mode: 'iterable' }, { credit: 1, resume: { grace_ms: 10_000 } });
    for (let i = 0; i < calls; i++) await p.next((e) => e.id === `m${i}` && e.type === 'call.responded');
    await p.drop();
    await until(() => server.resumable.budget.bytes >= calls * MIB, 'every replay full');
    const kept = server.resumable.budget.bytes;
    const extra = liveBytes() - before;
    server.resumable.close();
    expect(extra).toBeLessThan(kept * 1.25 + SLACK);
  });
});

describe('a server that stops with calls waiting for their callers', () => {
  it('tears every one of them down, and a resume on the way in is refused', async () => {
    let running = 0;
    const held = defineOperation({
      name: 'test/held',
      kind: 'subscription',
      input: z.null(),
      output: z.object({ n: z.number() }),
      handler: () =>
        new Observable<{ n: number }>((subscriber) => {
          running++;
          subscriber.next({ n: 0 });
          return () => running--;
        }),
    });
    const server = await startServer({ port: 0, webTransportPort: 0, docker: false, http3: false, operations: [held] });
    const a = await rawConnect(server.wsUrl, { codec: 'msgpack' });
    for (let i = 0; i < 5; i++) a.request(`h${i}`, 'test/held', null, { credit: 1 << 16, resume: { grace_ms: 60_000 } });
    const offer = await a.next((e) => e.id === 'h4' && e.type === 'call.resumable');
    await a.next((e) => e.id === 'h4' && e.type === 'call.responded');
    await a.drop();
    await until(() => server.resumable.detached === 5, 'the calls waiting for their caller');
    const b = await rawConnect(server.wsUrl, { codec: 'msgpack' });
    const closing = server.close();
    b.sendValue({ type: 'call.resume', id: 'h4', payload: { token: (offer.payload as { token: string }).token, seq: 1, credit: 1 << 16 } });
    await closing;
    expect(running).toBe(0);
    expect(server.resumable.size).toBe(0);
    expect(b.framesFor('h4').map((e) => e.type)).not.toContain('call.resumed');
    await b.close();
  });
});

describe('replay bounds smaller than what a caller consumes before it grants again', () => {
  let server: RunningServer;
  beforeAll(async () => {
    // A caller renews its credit after half a window (1 MiB by default): these bounds fill first.
    server = await startServer({ port: 0, webTransportPort: 0, docker: false, http3: false, conformance: true, limits: { maxReplayBytesPerCall: 128 * 1024, maxReplayBytesPerIdentity: 384 * 1024 } });
  });
  afterAll(() => server.close());

  const drain = async (client: Awaited<ReturnType<typeof connect>>, items: number): Promise<number> => {
    let n = 0;
    for await (const _item of client.iterate('conformance/flood', { items, itemBytes: 1000, mode: 'iterable' })) n++;
    return n;
  };

  it('the SDK acknowledges what it receives, not only what its consumer takes, so a full replay never waits for a grant that cannot come (RSM-3)', async () => {
    const client = await connect(server.wsUrl, { codec: 'msgpack', resume: { graceMs: 10_000 } });
    try {
      const streams = Promise.all([drain(client, 2000), drain(client, 2000), drain(client, 2000), drain(client, 2000)]);
      expect(await Promise.race([streams, sleep(8000).then(() => 'stuck')])).toEqual([2000, 2000, 2000, 2000]);
    } finally {
      await client.close();
    }
  });
});
