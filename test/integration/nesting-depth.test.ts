import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawConnect, type RawPeer } from '../../src/conformance/index.js';
import { encodeFrame, envelopes, limits, type CodecName } from '../../src/protocol/index.js';
import { runCli, type CliRun } from '../support/cli.js';
import { nestedEncoding } from '../support/nesting.js';

const TOKEN = 'nesting-depth-runner';
/** Levels the review found fatal over HTTP (1,600 and 2,000), and far beyond. */
const KILLING = [1_600, 2_000, 100_000];
const MEDIA: Record<CodecName, string> = { json: 'application/json', msgpack: 'application/msgpack' };
/** An HTTP body is the input, which may nest maxNestingDepth less the envelope and payload around it (LIM-2). */
const BODY_LIMIT = limits.maxNestingDepth - 2;

/**
 * Frames and bodies nested deeper than maxNestingDepth (spec §9, LIM-2), against
 * the real `callwire serve` in a process of its own, so that a crash shows as a
 * dead process rather than as a failure of this one.
 */
describe('nesting depth: one deep request never kills the server', () => {
  let run: CliRun;
  let http = '';
  let ws = '';
  let wt = '';
  let certHash = '';
  beforeAll(async () => {
    run = runCli(['serve', '--conformance', '--port', '0', '--wt-port', '0', '--no-http3'], {
      env: { CALLWIRE_TOKENS: JSON.stringify({ tokens: [{ token: TOKEN, subject: 'runner', scopes: ['*'] }] }), CALLWIRE_TOKENS_FILE: '' },
    });
    ws = (await run.waitFor(/ws:\/\/127\.0\.0\.1:\d+\/callwire/, 'stdout')).trim();
    wt = (await run.waitFor(/https:\/\/127\.0\.0\.1:\d+\/callwire/, 'stdout')).trim();
    certHash = (await run.waitFor(/sha256 [0-9a-f]{64}/, 'stdout')).split(' ')[1]!;
    http = ws.replace('ws://', 'http://').replace(/\/callwire$/, '');
  });
  afterAll(async () => {
    run.child.kill('SIGTERM');
    await run.exited;
  });

  const post = async (path: string, body: Uint8Array | string | null, headers: Record<string, string>): Promise<{ status: number; envelope: { outcome: string; output?: unknown; diagnostics: { code: string; message: string }[] } }> => {
    const res = await fetch(`${http}${path}`, { method: 'POST', body: body instanceof Uint8Array ? Buffer.from(body) : body, headers });
    return { status: res.status, envelope: (await res.json()) as never };
  };
  /** The server process is alive and still answers an ordinary call over HTTP. */
  const stillServing = async (): Promise<void> => {
    expect(run.child.exitCode).toBeNull();
    const answer = await post('/call/conformance/echo', JSON.stringify({ value: 'still here' }), { 'content-type': 'application/json' });
    expect(answer).toMatchObject({ status: 200, envelope: { outcome: 'success', output: { value: 'still here' } } });
  };

  it('services/info announces maxNestingDepth with the other limits', async () => {
    const answer = await post('/call/services/info', null, {});
    expect(answer).toMatchObject({ status: 200, envelope: { output: { limits: { maxNestingDepth: limits.maxNestingDepth, maxFrameBytes: limits.maxFrameBytes } } } });
  });

  for (const codec of ['json', 'msgpack'] as const) {
    for (const levels of KILLING) {
      it(`HTTP, ${codec} body ${levels.toLocaleString('en')} levels deep, no token: 400 naming the limit, and the server serves on`, async () => {
        const body = nestedEncoding(codec, { value: null }, levels);
        const answer = await post('/call/conformance/echo', body, { 'content-type': MEDIA[codec] });
        expect(answer.status).toBe(400);
        expect(answer.envelope).toMatchObject({ outcome: 'invalid_input', call_id: null, diagnostics: [{ code: 'INVALID_INPUT', message: expect.stringContaining(`nests more than ${BODY_LIMIT} maps and arrays`) }] });
        await stillServing();
      });
    }

    it(`HTTP, ${codec}: a body exactly ${BODY_LIMIT} deep is answered; one level more is 400`, async () => {
      // {value: …} is a level: the arrays inside it take the rest.
      const atLimit = await post('/call/conformance/echo', nestedEncoding(codec, { value: null }, BODY_LIMIT - 1), { 'content-type': MEDIA[codec] });
      expect(atLimit).toMatchObject({ status: 200, envelope: { outcome: 'success' } });
      let depth = 1;
      for (let v = (atLimit.envelope.output as { value: unknown }).value; Array.isArray(v); v = v[0] as unknown) depth++;
      expect(depth).toBe(BODY_LIMIT);
      const over = await post('/call/conformance/echo', nestedEncoding(codec, { value: null }, BODY_LIMIT), { 'content-type': MEDIA[codec] });
      expect(over.status).toBe(400);
    });

    for (const transport of ['WebSocket', 'WebTransport over HTTP/2'] as const) {
      it(`${transport}, ${codec}: frames of 65 to 100,000 levels are refused undecoded, and the server serves on`, async () => {
        const connect = (): Promise<RawPeer> => (transport === 'WebSocket' ? rawConnect(ws, { codec, token: TOKEN }) : rawConnect(wt, { codec, certHash, transport: 'h2' }));
        for (const levels of [limits.maxNestingDepth - 1, ...KILLING]) {
          const c = await connect();
          try {
            const id = `deep-${levels}`;
            const frame = nestedEncoding(codec, envelopes.requested(id, { operationId: 'conformance/echo', input: null }), levels);
            if (c.transport === 'websocket') {
              c.sendBytes(frame);
              // ENV-5 and LIM-2: no readable id, so the connection goes (4400).
              expect(await c.events.take((e) => e.kind === 'close', 5000)).toMatchObject({ kind: 'close', code: 4400 });
            } else {
              c.sendBytes(encodeFrame(frame), id);
              // WT-3: that stream is reset; the session and its other calls go on.
              expect(await c.events.take((e) => e.kind !== 'frame' || e.id === id, 5000)).toMatchObject({ kind: 'stream-reset', id });
              c.sendValue(envelopes.requested('after', { operationId: 'conformance/echo', input: { value: 1 } }));
              expect(await c.events.take((e) => e.kind === 'frame' && e.id === 'after', 5000)).toMatchObject({ value: { type: 'call.responded', payload: { output: { value: 1 } } } });
            }
          } finally {
            await c.close();
          }
        }
        await stillServing();
      });
    }
  }

  it('a caller without a token never has its body parsed: not JSON, or 100,000 levels deep, a call that needs a token is 401', async () => {
    for (const body of ['{not json', nestedEncoding('json', { value: null }, 100_000)]) {
      const answer = await post('/call/conformance/restricted', body, { 'content-type': 'application/json' });
      expect(answer.status).toBe(401);
      expect(answer.envelope).toMatchObject({ outcome: 'forbidden', diagnostics: [{ code: 'FORBIDDEN', message: 'authentication required' }] });
    }
    // With a token the same body is read, and refused for what it is.
    const read = await post('/call/conformance/restricted', '{not json', { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` });
    expect(read.status).toBe(400);
  });

  it('the 401 comes before the body: a caller that waits for 100 Continue is never asked for it', async () => {
    const answer = await new Promise<{ status: number; continued: boolean }>((resolve, reject) => {
      let continued = false;
      const req = request(`${http}/call/conformance/restricted`, { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': '100', expect: '100-continue' } });
      req.on('continue', () => (continued = true));
      req.on('response', (res) => {
        res.resume();
        resolve({ status: res.statusCode ?? 0, continued });
        req.destroy();
      });
      req.on('error', reject);
      req.flushHeaders();
    });
    expect(answer).toEqual({ status: 401, continued: false });
  });
});
