import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket, WebSocketServer } from 'ws';
import { RpcError } from '../../src/client/index.js';
import { connect } from '../../src/client-node/index.js';
import { closeCodes, SHUTDOWN_REASON } from '../../src/protocol/index.js';
import { selfSignedCertificate } from '../../src/server/certificate.js';
import { startServer, type RunningServer } from '../../src/server/index.js';
import { loadWebTransport, type WtServer } from '../../src/webtransport/index.js';
import { until, within } from '../support/wait.js';

/**
 * Only the server's own shutdown is a shutdown (spec §5.2: 1001 with the reason
 * `server shutting down`): a client gives up its resumable calls at once for that alone.
 * A proxy in front of the server that restarts also closes with 1001, with a reason of
 * its own or none; that is a lost connection, and the calls resume through the proxy
 * once it is back. Taking every 1001 for a shutdown would fail every call behind a
 * restarting proxy.
 */

/** A WebSocket proxy that relays every message both ways and can `restart()`: each client hears 1001 with `reason`, each upstream is dropped. */
class RestartingProxy {
  private readonly wss: WebSocketServer;
  private readonly pairs = new Set<{ client: WebSocket; upstream: WebSocket }>();
  url = '';
  restarts = 0;

  constructor(private readonly target: string) {
    this.wss = new WebSocketServer({ port: 0, host: '127.0.0.1', handleProtocols: (offered) => [...offered][0] ?? false });
  }

  async start(): Promise<this> {
    await new Promise((resolve) => this.wss.once('listening', resolve));
    this.url = `ws://127.0.0.1:${(this.wss.address() as AddressInfo).port}/callwire`;
    this.wss.on('connection', (client, req) => {
      const upstream = new WebSocket(this.target, client.protocol ? [client.protocol] : [], { headers: req.headers.authorization ? { authorization: req.headers.authorization } : {} });
      const pair = { client, upstream };
      this.pairs.add(pair);
      const early: Buffer[] = [];
      client.on('message', (data: Buffer) => (upstream.readyState === WebSocket.OPEN ? upstream.send(data) : early.push(data)));
      upstream.on('open', () => early.splice(0).forEach((data) => upstream.send(data)));
      upstream.on('message', (data: Buffer) => client.readyState === WebSocket.OPEN && client.send(data));
      const end = (): void => {
        this.pairs.delete(pair);
        upstream.terminate();
        if (client.readyState === WebSocket.OPEN) client.close(1011, 'upstream gone');
      };
      upstream.on('close', end);
      client.on('close', end);
      for (const s of [client, upstream]) s.on('error', () => undefined);
    });
    return this;
  }

  /** The proxy going down for a restart: its clients hear 1001 and `reason`, the server a connection lost. */
  restart(reason: string): void {
    this.restarts++;
    for (const { client, upstream } of [...this.pairs]) {
      upstream.terminate();
      client.close(closeCodes.GOING_AWAY, reason);
    }
  }

  async stop(): Promise<void> {
    for (const { client, upstream } of this.pairs) {
      client.terminate();
      upstream.terminate();
    }
    await new Promise((resolve) => this.wss.close(resolve));
  }
}

describe('a 1001 close that is not the server shutting down is a lost connection', () => {
  let server: RunningServer;
  beforeAll(async () => {
    server = await startServer({ port: 0, webTransportPort: false, http3: false, docker: false, conformance: true });
  });
  afterAll(async () => {
    await server?.close();
  });

  for (const reason of ['proxy restarting', '']) {
    it(`WebSocket: a proxy that restarts, closing with 1001 ${reason ? `"${reason}"` : 'and no reason'}: the client reconnects and the stream resumes, every item once`, async () => {
      const proxy = await new RestartingProxy(server.wsUrl).start();
      const client = await connect(proxy.url, { codec: 'msgpack', resume: { graceMs: 30_000 } });
      let reconnecting = 0;
      client.on('reconnecting', () => reconnecting++);
      try {
        const count = 2000;
        const seen: number[] = [];
        const done = (async () => {
          for await (const item of client.iterate<{ n: number }>('conformance/count', { count }, { windowBytes: 4096 })) {
            seen.push(item.n);
            // Read slowly enough that the stream is still running when the proxy restarts.
            if (item.n % 100 === 0) await new Promise((resolve) => setTimeout(resolve, 20));
          }
        })();
        await until(() => seen.length >= 300, 'the stream under way');
        proxy.restart(reason);
        await within(done, 20_000, 'the stream resumed to its end');
        expect(reconnecting).toBeGreaterThanOrEqual(1);
        expect(seen).toEqual(Array.from({ length: count }, (_, n) => n));
      } finally {
        await client.close();
        await proxy.stop();
      }
    });
  }
});

describe('WebTransport: a session closed with 1001 is a shutdown only with the server\'s reason', () => {
  let wt: WtServer;
  let url = '';
  let certHash = '';
  let closeWith: { closeCode: number; reason: string } = { closeCode: closeCodes.GOING_AWAY, reason: 'proxy restarting' };
  beforeAll(async () => {
    const lib = await loadWebTransport();
    const cert = await selfSignedCertificate(['127.0.0.1', 'localhost']);
    certHash = cert.sha256;
    wt = new lib.Http2Server({ port: 0, host: '127.0.0.1', secret: 'going-away-test-secret', cert: cert.certPem, privKey: cert.keyPem });
    wt.setRequestCallback(async ({ header }) => ({ status: 200, path: header[':path'] ?? '/callwire', userData: {} }));
    wt.startServer();
    await wt.ready;
    url = `https://127.0.0.1:${wt.port}/callwire`;
    // A front that accepts each session, then goes away under its first stream.
    void (async () => {
      const sessions = wt.sessionStream('/callwire').getReader();
      for (let next = await sessions.read(); !next.done; next = await sessions.read()) {
        const session = next.value;
        void session.ready.then(async () => {
          await session.incomingBidirectionalStreams.getReader().read();
          session.close(closeWith);
        });
      }
    })().catch(() => undefined);
  });
  afterAll(() => {
    wt?.stopServer();
  });

  /** A call (not resumable: the front never admits it) through a front that closes its session under it. */
  const callThrough = async (): Promise<RpcError> => {
    const client = await connect(url, { certHash, transport: 'h2', codec: 'msgpack' });
    try {
      const error = await within(client.call('conformance/echo', { value: 1 }).catch((e: unknown) => e), 10_000, 'the end of a call through a front that goes away');
      expect(error).toBeInstanceOf(RpcError);
      return error as RpcError;
    } finally {
      await client.close();
    }
  };

  it('1001 "proxy restarting": the call hears a lost connection, not a shutdown', async () => {
    closeWith = { closeCode: closeCodes.GOING_AWAY, reason: 'proxy restarting' };
    const error = await callThrough();
    expect(error.code).toBe('UNAVAILABLE');
    expect(error.message).toBe('connection closed');
  });

  it('1001 "server shutting down": the call hears that the server is shutting down', async () => {
    closeWith = { closeCode: closeCodes.GOING_AWAY, reason: SHUTDOWN_REASON };
    const error = await callThrough();
    expect(error.code).toBe('UNAVAILABLE');
    expect(error.message).toContain(`the server at ${url} is shutting down`);
  });
});
