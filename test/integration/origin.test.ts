import { connect as http2Connect, constants } from 'node:http2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { probeHandshake } from '../../src/conformance/index.js';
import { startServer, type RunningServer } from '../../src/server/index.js';
import { checkBrowserRequest } from '../../src/transports/index.js';

/** The upgrade's HTTP status, or 101 when the socket opened. */
async function upgrade(url: string, headers: Record<string, string>): Promise<number> {
  return (await probeHandshake(url, [], headers)).status ?? 101;
}

/** A raw HTTP/2 extended CONNECT for a WebTransport session, as a browser sends it. */
async function webTransportStatus(server: RunningServer, headers: Record<string, string>): Promise<number> {
  const url = new URL(server.wtUrl!);
  const session = http2Connect(url.origin, { rejectUnauthorized: false });
  try {
    await new Promise<void>((resolve, reject) => {
      session.once('remoteSettings', () => resolve());
      session.once('error', reject);
    });
    const stream = session.request({
      [constants.HTTP2_HEADER_METHOD]: 'CONNECT',
      ':protocol': 'webtransport',
      [constants.HTTP2_HEADER_SCHEME]: 'https',
      [constants.HTTP2_HEADER_PATH]: '/callwire',
      ...headers,
    });
    return await new Promise<number>((resolve, reject) => {
      stream.once('response', (h) => {
        resolve(Number(h[constants.HTTP2_HEADER_STATUS]));
        stream.close();
      });
      stream.once('error', reject);
    });
  } finally {
    session.destroy();
  }
}

describe('browser origins and DNS rebinding (spec §10.1)', () => {
  let server: RunningServer;
  let host: string;

  beforeAll(async () => {
    server = await startServer({ port: 0, webTransportPort: 0, docker: false, allowOrigins: ['https://app.example'], allowHosts: ['callwire.test'] });
    host = new URL(server.wsUrl).host;
  });
  afterAll(() => server.close());

  it('a foreign page is refused at the WebSocket upgrade with 403; the rest pass', async () => {
    expect(await upgrade(server.wsUrl, { Origin: 'https://evil.example' })).toBe(403);
    expect(await upgrade(server.wsUrl, { Origin: 'null' })).toBe(403);
    expect(await upgrade(server.wsUrl, {})).toBe(101); // no Origin: not a browser
    expect(await upgrade(server.wsUrl, { Origin: `http://${host}` })).toBe(101); // the server's own pages
    expect(await upgrade(server.wsUrl, { Origin: 'https://app.example' })).toBe(101); // --allow-origin
    expect(await upgrade(server.wsUrl, { Origin: 'https://app.example:8443' })).toBe(403); // another port is another origin
  });

  it('a rebinding name in Host is refused while bound to loopback; loopback names and --allow-host pass', async () => {
    const port = new URL(server.wsUrl).port;
    expect(await upgrade(server.wsUrl, { Host: `evil.example:${port}` })).toBe(403);
    // The rebinding page is same-origin with itself: Origin does not save us, Host does.
    expect(await upgrade(server.wsUrl, { Host: `evil.example:${port}`, Origin: `http://evil.example:${port}` })).toBe(403);
    expect(await upgrade(server.wsUrl, { Host: `localhost:${port}` })).toBe(101);
    expect(await upgrade(server.wsUrl, { Host: `callwire.test:${port}` })).toBe(101);
  });

  it('the reference path is served under the same rules', async () => {
    const alias = server.wsUrl.replace('/callwire', '/alknet/call');
    expect(await upgrade(alias, { Origin: 'https://evil.example' })).toBe(403);
    expect(await upgrade(alias, {})).toBe(101);
  });

  it('a WebTransport session request carries its origin too: foreign ones get 403', async () => {
    expect(await webTransportStatus(server, { origin: 'https://evil.example' })).toBe(403);
    expect(await webTransportStatus(server, { origin: 'https://app.example' })).toBe(200);
    expect(await webTransportStatus(server, {})).toBe(200);
  });

  it('"*" is refused without tokens, and an origin must look like one', async () => {
    await expect(startServer({ port: 0, webTransportPort: false, docker: false, allowOrigins: ['*'] })).rejects.toThrow(/needs tokens/);
    await expect(startServer({ port: 0, webTransportPort: false, docker: false, allowOrigins: ['app.example'] })).rejects.toThrow(/origin like/);
  });

  it('the rule itself: bare host names (the Node WebTransport library) are not browser origins', () => {
    const policy = { allowOrigins: [], allowHosts: [], checkHost: true };
    expect(checkBrowserRequest(policy, '127.0.0.1', '127.0.0.1:7071')).toEqual({ ok: true });
    expect(checkBrowserRequest(policy, undefined, undefined)).toMatchObject({ ok: false, status: 403 });
    expect(checkBrowserRequest(policy, undefined, '[::1]:7070')).toEqual({ ok: true });
    expect(checkBrowserRequest(policy, undefined, '127.1.2.3')).toEqual({ ok: true });
    expect(checkBrowserRequest(policy, undefined, '127.0.0.1.evil.example')).toMatchObject({ ok: false });
  });
});
