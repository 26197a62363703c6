import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServerFixture } from '../support/server-fixture.js';

interface Answer {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: string;
}

/** One raw HTTP request, with whatever `Host` and `Origin` a browser (or a rebinding page) would send. */
function send(url: string, method: string, headers: Record<string, string>, body?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers: { ...headers, ...(body === undefined ? {} : { 'content-length': String(Buffer.byteLength(body)) }) } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const ALLOWED = 'https://app.example';

/**
 * `POST /call/` under the browser rules of the WebSocket upgrade (spec §5.6, §10.1):
 * a page of another origin, or one reached through a rebinding name, runs nothing.
 * `test/secret` counts each run in the probe, so "refused" means "never ran".
 */
describe('plain HTTP calls: origins and DNS rebinding (spec §10.1)', () => {
  const fx = new ServerFixture();
  let call = '';
  let port = '';

  beforeAll(async () => {
    await fx.start({ webTransportPort: false, allowOrigins: [ALLOWED], allowHosts: ['callwire.test'] });
    const base = new URL(fx.server.wsUrl);
    port = base.port;
    call = `http://${base.host}/call/test/secret`;
  });
  afterAll(() => fx.stop());

  it('a foreign origin, null included, is refused with 403 FORBIDDEN and the operation never runs', async () => {
    const before = fx.probe.started;
    for (const origin of ['https://evil.example', 'null', `${ALLOWED}:8443`, `http://localhost:${port}`]) {
      // No body, no Content-Type: the request a page may send without a preflight (a "simple" one).
      const answer = await send(call, 'POST', { origin });
      expect(answer.status, origin).toBe(403);
      expect(JSON.parse(answer.body)).toMatchObject({ outcome: 'forbidden', call_id: null, diagnostics: [{ code: 'FORBIDDEN', message: expect.stringMatching(/origin .* is not allowed/) }] });
      // Nothing tells the foreign page it may read the answer.
      expect(answer.headers['access-control-allow-origin']).toBeUndefined();
    }
    expect(fx.probe.started).toBe(before);
  });

  it('a foreign origin\'s preflight is refused too, and an allowed one\'s is answered', async () => {
    const preflight = { 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' };
    expect((await send(call, 'OPTIONS', { origin: 'https://evil.example', ...preflight })).status).toBe(403);
    const allowed = await send(call, 'OPTIONS', { origin: ALLOWED, ...preflight });
    expect(allowed.status).toBe(204);
    expect(allowed.headers['access-control-allow-origin']).toBe(ALLOWED);
  });

  it('a rebinding name in Host is refused while bound to loopback, even same-origin with itself', async () => {
    const before = fx.probe.started;
    for (const headers of [{ host: `evil.example:${port}` }, { host: `evil.example:${port}`, origin: `http://evil.example:${port}` }, { host: `127.0.0.1.evil.example:${port}` }]) {
      const answer = await send(call, 'POST', headers);
      expect(answer.status, JSON.stringify(headers)).toBe(403);
      expect(JSON.parse(answer.body)).toMatchObject({ outcome: 'forbidden', diagnostics: [{ code: 'FORBIDDEN', message: expect.stringMatching(/Host .* is not a loopback name/) }] });
    }
    expect(fx.probe.started).toBe(before);
  });

  it('a program (no Origin), the server\'s own pages, an allowed origin and an allowed or loopback Host all run the call', async () => {
    const passing: Record<string, string>[] = [
      {},
      { origin: `http://127.0.0.1:${port}` },
      { origin: ALLOWED },
      { host: `localhost:${port}` },
      { host: `callwire.test:${port}`, origin: `http://callwire.test:${port}` },
    ];
    for (const headers of passing) {
      const before = fx.probe.started;
      const answer = await send(call, 'POST', headers);
      expect(answer.status, JSON.stringify(headers)).toBe(200);
      expect(JSON.parse(answer.body)).toMatchObject({ outcome: 'success', output: 'classified' });
      expect(fx.probe.started).toBe(before + 1);
    }
    const cors = await send(call, 'POST', { origin: ALLOWED });
    expect(cors.headers['access-control-allow-origin']).toBe(ALLOWED);
  });
});
