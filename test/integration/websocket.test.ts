import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { firstValueFrom, of } from 'rxjs';
import { z } from 'zod';
import { connect } from '../../src/client-node/index.js';
import { rawConnect, type RawPeer } from '../../src/conformance/index.js';
import { createDispatcher, defineOperation } from '../../src/dispatcher/index.js';
import { createWebSocketTransport } from '../../src/transports/index.js';
import { codecs, envelopes, subprotocols } from '../../src/protocol/index.js';
import { startServer } from '../../src/server/index.js';
import { ServerFixture } from '../support/server-fixture.js';
import { sampleRegistry } from '../support/sample-ops.js';
import { until } from '../support/wait.js';

const TOKEN = 'canary-token-0123456789abcdef';

const open = (url: string, offered: string[] = [subprotocols.msgpack], headers: Record<string, string> = {}): Promise<RawPeer> =>
  rawConnect(url, { codec: 'msgpack', subprotocols: offered, headers });

const closeOf = async (peer: RawPeer): Promise<number> => (await peer.waitForClose()).code;

describe('WebSocket transport (spec §5.2)', () => {
  const fx = new ServerFixture();
  beforeAll(() => fx.start({ webTransportPort: false, tokens: [{ token: TOKEN, subject: 'ci', scopes: ['secret:read', 'secret:write'] }] }).then(() => undefined));
  afterAll(() => fx.stop());

  it('a text message closes with 1002', async () => {
    const ws = await open(fx.server.wsUrl);
    const closed = closeOf(ws);
    ws.sendText('{"type":"call.requested"}');
    expect(await closed).toBe(1002);
  });

  it('an undecodable message closes with 4400', async () => {
    const ws = await open(fx.server.wsUrl);
    const closed = closeOf(ws);
    ws.sendBytes(new Uint8Array([0x82, 0xa1]));
    expect(await closed).toBe(4400);
  });

  it('a message over maxFrameBytes closes with 1009', async () => {
    const server = await startServer({ port: 0, webTransportPort: false, limits: { maxFrameBytes: 1024 } });
    try {
      const ws = await open(server.wsUrl);
      const closed = closeOf(ws);
      ws.sendBytes(new Uint8Array(2048));
      expect(await closed).toBe(1009);
    } finally {
      await server.close();
    }
  });

  it('picks the first supported subprotocol in the caller order, msgpack when none is offered', async () => {
    const a = await open(fx.server.wsUrl, ['x.unknown', subprotocols.json, subprotocols.msgpack]);
    expect(a.protocol).toBe(subprotocols.json);
    await a.close();
    const b = await open(fx.server.wsUrl, []);
    expect(b.protocol).toBe('');
    b.sendBytes(codecs.msgpack.encode(envelopes.requested('m1', { operationId: 'test/echo', input: { text: 'mp' } })));
    // The peer reads msgpack: an answer in any other codec would be undecodable, not this frame.
    expect(await b.events.take(() => true, 5000)).toMatchObject({ kind: 'frame', value: { id: 'm1', payload: { output: { text: 'mp' } } } });
    await b.close();
  });

  it('refuses only-unknown subprotocols with HTTP 400', async () => {
    await expect(open(fx.server.wsUrl, ['callwire.v9.cbor'])).rejects.toThrow('HTTP 400');
  });

  it('refuses an unknown bearer token with HTTP 401, and accepts a known one as the connection identity', async () => {
    await expect(open(fx.server.wsUrl, [subprotocols.msgpack], { Authorization: 'Bearer wrong-token-000000' })).rejects.toThrow('HTTP 401');
    const client = await connect(fx.server.wsUrl, { token: TOKEN });
    expect(await client.call('test/secret')).toBe('classified');
    const anonymous = await connect(fx.server.wsUrl);
    await expect(anonymous.call('test/secret')).rejects.toMatchObject({ code: 'FORBIDDEN', message: 'authentication required' });
    await Promise.all([client.close(), anonymous.close()]);
  });

  it('a per-call auth_token works where headers cannot be set (the browser path)', async () => {
    const anonymous = await connect(fx.server.wsUrl);
    expect(await anonymous.call('test/secret', null, { token: TOKEN })).toBe('classified');
    await anonymous.close();
  });

  it('attaches to an existing HTTP server and leaves its other routes alone', async () => {
    const http = createServer((_req, res) => res.end('app'));
    const { registry } = sampleRegistry();
    const ws = createWebSocketTransport({ dispatcher: createDispatcher({ registry }), paths: ['/rpc'] }, http);
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    const port = (http.address() as AddressInfo).port;
    try {
      expect(await (await fetch(`http://127.0.0.1:${port}/`)).text()).toBe('app');
      const client = await connect(`ws://127.0.0.1:${port}/rpc`);
      expect(await client.call('test/echo', { text: 'attached' })).toEqual({ text: 'attached' });
      await client.close();
    } finally {
      await ws.close();
      await new Promise((resolve) => http.close(resolve));
    }
  });

  it('noServer: an embedder that owns the upgrade handling passes ours on and keeps its own', async () => {
    const http = createServer();
    const { registry } = sampleRegistry();
    const ws = createWebSocketTransport({ dispatcher: createDispatcher({ registry }) });
    http.on('upgrade', (req, socket, head) => {
      if (!ws.handleUpgrade(req, socket, head)) socket.end('HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n');
    });
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    const port = (http.address() as AddressInfo).port;
    try {
      const client = await connect(`ws://127.0.0.1:${port}/callwire`);
      expect(await client.call('test/echo', { text: 'embedded' })).toEqual({ text: 'embedded' });
      await client.close();
      await expect(connect(`ws://127.0.0.1:${port}/elsewhere`, { connectTimeoutMs: 2000 })).rejects.toThrow(/404/);
    } finally {
      await ws.close();
      await new Promise((resolve) => http.close(resolve));
    }
  });

  it('Nagle is off on server sockets', async () => {
    const spy = vi.spyOn(Socket.prototype, 'setNoDelay');
    try {
      const client = await connect(fx.server.wsUrl);
      await client.call('test/echo', { text: 'x' });
      const serverSide = spy.mock.contexts.filter((socket, i) => spy.mock.calls[i]![0] === true && (socket as Socket).localPort === Number(new URL(fx.server.wsUrl).port));
      expect(serverSide).toHaveLength(1);
      await client.close();
    } finally {
      spy.mockRestore();
    }
  });

  it('graceful close: live calls get the grace period, then UNAVAILABLE; new connections are refused', async () => {
    const fx2 = await new ServerFixture().start({ webTransportPort: false });
    const client = await fx2.client({ name: 'ws', url: (s) => s.wsUrl, options: () => ({}) });
    const quick = client.call('test/sleep', { ms: 50 });
    const slow = client.call('test/sleep', { ms: 60_000 });
    await until(() => fx2.liveCalls() === 2, 'both calls live');
    const closing = fx2.server.close(300);
    await expect(quick).resolves.toBe('slept');
    await expect(slow).rejects.toMatchObject({ code: 'UNAVAILABLE' });
    await closing;
    await expect(connect(fx2.server.wsUrl, { connectTimeoutMs: 2000 })).rejects.toMatchObject({ code: 'UNAVAILABLE' });
  });
});

describe('call ids the client picks', () => {
  it('are short, distinct across many calls and streams, and distinct between clients', async () => {
    const whoAmI = defineOperation({ name: 'test/call-id', kind: 'query', input: z.null(), output: z.string(), handler: (_input, ctx) => ctx.callId });
    const idStream = defineOperation({
      name: 'test/call-id-stream',
      kind: 'subscription',
      input: z.null(),
      output: z.string(),
      handler: (_input, ctx) => of(ctx.callId),
    });
    const server = await startServer({ port: 0, webTransportPort: false, operations: [whoAmI, idStream] });
    try {
      const [a, b] = await Promise.all([connect(server.wsUrl), connect(server.wsUrl)]);
      const unary = await Promise.all([a, b].flatMap((client) => Array.from({ length: 300 }, () => client.call<string>('test/call-id'))));
      const streams = await Promise.all([a, b].flatMap((client) => Array.from({ length: 50 }, () => firstValueFrom(client.subscribe<string>('test/call-id-stream')))));
      const ids = [...unary, ...streams];
      expect(new Set(ids).size).toBe(ids.length);
      // A UUID took 36 bytes of every frame; these take a dozen or so.
      expect(Math.max(...ids.map((id) => id.length))).toBeLessThanOrEqual(12);
      const prefix = (id: string): string => id.slice(0, id.indexOf('-') + 1);
      expect(new Set(unary.slice(0, 300).map(prefix)).size).toBe(1);
      expect(prefix(unary[0]!)).not.toBe(prefix(unary[300]!));
      await Promise.all([a.close(), b.close()]);
    } finally {
      await server.close();
    }
  });
});
