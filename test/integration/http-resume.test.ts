import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseResultRecord } from '../support/result-record-schema.js';
import { readStream, type StreamRecord } from '../support/http-stream.js';
import { ServerFixture } from '../support/server-fixture.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { until } from '../support/wait.js';

const ALICE = 'alice-token-0123456789';
const BOB = 'bob-token-0123456789ab';
const as = (token: string): Record<string, string> => ({ authorization: `Bearer ${token}` });
const SSE = { accept: 'text/event-stream' };

/** The `n` of each value record (the envelope, last, has none). */
const numbers = (records: readonly StreamRecord[]): number[] => records.filter((r) => r.event !== 'terminal').map((r) => (JSON.parse(r.data) as { n: number }).n);

/**
 * Resumable calls over plain HTTP (spec §5.6, HTTP-6 … HTTP-11), with the sample
 * operations on a real server with two identities: a stream whose connection is cut
 * is taken up again by a new request, and every other try is refused.
 */
describe('plain HTTP: resuming a stream', () => {
  const fx = new ServerFixture();
  let base = '';
  let proxy: TcpProxy;
  beforeAll(async () => {
    await fx.start({
      webTransportPort: false,
      tokens: [
        { token: ALICE, subject: 'alice', scopes: ['*'] },
        { token: BOB, subject: 'bob', scopes: ['*'] },
      ],
      limits: { maxReplayBytesPerCall: 64 * 1024 },
    });
    base = fx.server.wsUrl.replace('ws://', 'http://').replace(/\/callwire$/, '');
    proxy = await new TcpProxy().start(Number(new URL(base).port));
  });
  afterAll(async () => {
    await proxy.stop();
    await fx.stop();
  });
  const via = (path: string): string => `${proxy.via(base).replace(/\/$/, '')}${path}`;
  const direct = (path: string): string => `${base}${path}`;

  it('SSE: each value carries id <token>.<seq>; cut, then Last-Event-ID takes the stream up after it: every value once, then the end', async () => {
    const first = await readStream(via('/call/test/ticker'), { headers: { ...as(ALICE), ...SSE, 'x-callwire-resume-ms': '10000' }, body: JSON.stringify({ count: 400, intervalMs: 1 }) }, (records) => {
      if (records.length < 50) return false;
      proxy.cut();
      return true;
    });
    const token = first.headers['x-callwire-resume-token']!;
    expect(token).toMatch(/^[A-Za-z0-9_-]{22,}$/);
    expect(first.headers['x-callwire-resume-ms']).toBe('10000');
    expect(first.records.map((r) => r.id)).toEqual(first.records.map((_, i) => `${token}.${i + 1}`));
    const last = first.records.at(-1)!.id!;
    const rest = await readStream(direct('/call/test/ticker'), { headers: { ...as(ALICE), ...SSE, 'last-event-id': last } });
    expect(rest.status).toBe(200);
    expect(rest.complete).toBe(true);
    expect([...numbers(first.records), ...numbers(rest.records)]).toEqual(Array.from({ length: 400 }, (_, n) => n));
    const end = rest.records.at(-1)!;
    expect(end).toMatchObject({ event: 'terminal', id: `${token}.end` });
    expect(JSON.parse(end.data)).toMatchObject({ kind: 'callwire.terminal', outcome: 'success', events_seen: 400, call_id: first.headers['x-callwire-call-id'] });
    expect(rest.headers['x-callwire-call-id']).toBe(first.headers['x-callwire-call-id']);
    // An EventSource-like reader reconnects after the end: `<token>.end` lets the call go, and it stops.
    const release = await fetch(direct('/call/test/ticker'), { method: 'POST', headers: { ...as(ALICE), 'last-event-id': `${token}.end` } });
    expect(release.status).toBe(204);
    await until(() => fx.server.resumable.size === 0, 'the call was let go');
  });

  it('NDJSON: X-Callwire-Resume and X-Callwire-Resume-After (the values received) take the stream up', async () => {
    const first = await readStream(via('/call/test/ticker'), { headers: { ...as(ALICE), 'x-callwire-resume-ms': '10000' }, body: JSON.stringify({ count: 300, intervalMs: 1 }) }, (records) => {
      if (records.length < 120) return false;
      proxy.cut();
      return true;
    });
    const token = first.headers['x-callwire-resume-token']!;
    const rest = await readStream(direct('/call/test/ticker'), { headers: { ...as(ALICE), 'x-callwire-resume': token, 'x-callwire-resume-after': String(first.records.length) } });
    expect(rest.status).toBe(200);
    expect(rest.headers['connection']).toBe('close');
    const records = [...first.records, ...rest.records];
    expect(numbers(records.slice(0, -1))).toEqual(Array.from({ length: 300 }, (_, n) => n));
    expect(JSON.parse(records.at(-1)!.data)).toMatchObject({ kind: 'callwire.terminal', outcome: 'success', events_seen: 300 });
    await until(() => fx.server.resumable.detached === 1, 'the ended call is kept for its grace, no connection');
  });

  it('every refused resume gets the same 404, whether the token is unknown, another identity\'s or for another path; the call goes on for its owner', async () => {
    const first = await readStream(via('/call/test/ticker'), { headers: { ...as(ALICE), 'x-callwire-resume-ms': '10000' }, body: JSON.stringify({ count: 200, intervalMs: 2 }) }, (records) => {
      if (records.length < 10) return false;
      proxy.cut();
      return true;
    });
    const token = first.headers['x-callwire-resume-token']!;
    const tries = [
      { path: '/call/test/ticker', headers: { ...as(BOB), 'x-callwire-resume': token, 'x-callwire-resume-after': '10' } },
      { path: '/call/test/ticker', headers: { 'x-callwire-resume': token, 'x-callwire-resume-after': '10' } },
      { path: '/call/test/forever', headers: { ...as(ALICE), 'x-callwire-resume': token, 'x-callwire-resume-after': '10' } },
      { path: '/call/test/ticker', headers: { ...as(ALICE), 'x-callwire-resume': `${token.slice(0, -2)}AA`, 'x-callwire-resume-after': '10' } },
      { path: '/call/test/ticker', headers: { ...as(BOB), 'last-event-id': `${token}.end` } },
    ];
    const answers = await Promise.all(tries.map(async (t) => {
      const res = await fetch(direct(t.path), { method: 'POST', headers: t.headers });
      const body = parseResultRecord(await res.text());
      return { status: res.status, body: { ...body, operation: '' } };
    }));
    // Byte for byte the same but for the operation, which is the request's own path.
    for (const answer of answers) expect(answer).toEqual(answers[0]);
    expect(answers[0]!.status).toBe(404);
    expect(answers[0]!.body).toMatchObject({ outcome: 'infrastructure_failure', exit_code: 2, call_id: null, diagnostics: [{ code: 'NOT_FOUND' }] });
    expect(JSON.stringify(answers[0]!.body)).not.toContain(token);
    // None of them touched the call: its owner takes it up where it was.
    const rest = await readStream(direct('/call/test/ticker'), { headers: { ...as(ALICE), 'x-callwire-resume': token, 'x-callwire-resume-after': '10' } });
    expect(numbers([...first.records, ...rest.records].slice(0, -1))).toEqual(Array.from({ length: 200 }, (_, n) => n));
  });

  it('a resume takes the call from a request still answering it: that answer ends there with RESUMED_ELSEWHERE (RSM-10), the new one goes on', async () => {
    let resumed: ReturnType<typeof readStream> | undefined;
    const first = await readStream(direct('/call/test/ticker'), { headers: { ...as(ALICE), 'x-callwire-resume-ms': '10000' }, body: JSON.stringify({ count: 300, intervalMs: 2 }) }, (records, headers) => {
      if (records.length === 5) resumed = readStream(direct('/call/test/ticker'), { headers: { ...as(ALICE), 'x-callwire-resume': String(headers['x-callwire-resume-token']), 'x-callwire-resume-after': '5' } });
      return false;
    });
    // Its reader is told, not cut off: the envelope, whose diagnostic says the call went elsewhere.
    expect(first.complete).toBe(true);
    expect(parseResultRecord(first.records.at(-1)!.data)).toMatchObject({ outcome: 'infrastructure_failure', diagnostics: [{ code: 'RESUMED_ELSEWHERE' }] });
    const rest = await resumed!;
    expect(rest.complete).toBe(true);
    // The first answer may have written a few more values before it was ended: the second starts after the fifth.
    expect(numbers([...first.records.slice(0, 5), ...rest.records.slice(0, -1)])).toEqual(Array.from({ length: 300 }, (_, n) => n));
  });

  it('a resume after the grace is refused with 404, and the call was cancelled when its grace ended', async () => {
    const aborts = fx.probe.aborts;
    const first = await readStream(via('/call/test/ticker'), { headers: { ...as(ALICE), 'x-callwire-resume-ms': '300' }, body: JSON.stringify({ count: 100_000, intervalMs: 5 }) }, (records) => {
      if (records.length < 3) return false;
      proxy.cut();
      return true;
    });
    await until(() => fx.probe.aborts === aborts + 1, 'the call was cancelled once its grace passed');
    const late = await fetch(direct('/call/test/ticker'), { method: 'POST', headers: { ...as(ALICE), 'x-callwire-resume': first.headers['x-callwire-resume-token']!, 'x-callwire-resume-after': '3' } });
    expect(late.status).toBe(404);
    expect(parseResultRecord(await late.text())).toMatchObject({ outcome: 'infrastructure_failure', diagnostics: [{ code: 'NOT_FOUND', message: expect.stringMatching(/no resumable call/) }] });
  });

  it('a resume for values no longer kept is refused with 410 and ends the call: never a gap', async () => {
    const { teardowns, produced } = fx.probe;
    // The server keeps 64 KiB of what it wrote (its maxReplayBytesPerCall): once it has written
    // 200 values of 1 KiB, the first are gone, wherever they are between it and the reader.
    let cut: Promise<void> | undefined;
    const first = await readStream(via('/call/test/bytes'), { headers: { ...as(ALICE), 'x-callwire-resume-ms': '10000' }, body: JSON.stringify({ totalBytes: 64 * 1024 * 1024, chunkBytes: 1024 }) }, () => {
      cut ??= until(() => fx.probe.produced >= produced + 200, 'the server wrote 200 values').then(() => proxy.cut());
      return false;
    });
    await cut;
    expect(first.complete).toBe(false);
    const resume = (after: number): Record<string, string> => ({ ...as(ALICE), 'x-callwire-resume': first.headers['x-callwire-resume-token']!, 'x-callwire-resume-after': String(after) });
    const gone = await fetch(direct('/call/test/bytes'), { method: 'POST', headers: resume(0) });
    expect(gone.status).toBe(410);
    expect(parseResultRecord(await gone.text())).toMatchObject({ outcome: 'infrastructure_failure', exit_code: 2, diagnostics: [{ code: 'UNAVAILABLE', message: expect.stringMatching(/after item 0 is no longer kept; the call was ended/) }] });
    await until(() => fx.probe.teardowns === teardowns + 1, 'the call ended');
    // Its token died with it.
    const again = await fetch(direct('/call/test/bytes'), { method: 'POST', headers: resume(first.records.length) });
    expect(again.status).toBe(404);
  });
});
