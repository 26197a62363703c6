import { mkdtempSync, rmSync } from 'node:fs';
import { connect as http2Connect } from 'node:http2';
import { connect as netConnect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Client } from '../../src/client/index.js';
import type { ServerOptions } from '../../src/server/index.js';
import { hasHttp3, http3Missing, ServerFixture, transportCases } from '../support/server-fixture.js';
import { skipTitle } from '../support/skip.js';
import { sleep } from '../support/wait.js';

/** spec §9, maxConnections and LIM-4: every listener's connections are counted, and each must complete a request in time. */

interface Raw {
  readonly socket: Socket;
  /** Bytes the server sent. */
  received: number;
  readonly closed: Promise<void>;
}

/** A raw connection to `target` (a port on 127.0.0.1, or a unix socket's path), sending `bytes` once connected. */
function rawConnection(target: number | string, bytes?: string): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const socket = typeof target === 'number' ? netConnect(target, '127.0.0.1') : netConnect(target);
    let closed!: () => void;
    const raw: Raw = { socket, received: 0, closed: new Promise((r) => (closed = r)) };
    socket.on('data', (chunk: Buffer) => (raw.received += chunk.byteLength));
    socket.on('error', () => undefined);
    socket.on('close', () => closed());
    socket.once('connect', () => {
      if (bytes !== undefined) socket.write(bytes);
      resolve(raw);
    });
    socket.once('error', reject);
  });
}

/** Whether `raw` closes within `ms` (a bounded wait for the event, not a timing goal). */
async function closesWithin(raw: Raw, ms: number): Promise<boolean> {
  return Promise.race([raw.closed.then(() => true), sleep(ms).then(() => false)]);
}

interface Stats {
  openConnections: number;
  refusedConnections: number;
  silentConnectionsClosed: number;
}

const stats = (client: Client): Promise<Stats> => client.call('services/stats', null) as Promise<Stats>;

describe('connections that complete nothing (LIM-4)', () => {
  const fx = new ServerFixture();
  const dirs: string[] = [];
  const opened: Raw[] = [];
  afterEach(async () => {
    for (const raw of opened.splice(0)) raw.socket.destroy();
    await fx.stop();
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  const start = async (options: ServerOptions): Promise<string> => {
    const dir = mkdtempSync(join(tmpdir(), 'callwire-conns-'));
    dirs.push(dir);
    const socketPath = join(dir, 's.sock');
    await fx.start({ socketPath, ...options });
    return socketPath;
  };
  const port = (url: string): number => Number(new URL(url).port);

  it('a silent connection is closed after handshakeTimeoutMs on every listener: the HTTP/WebSocket port, the unix socket, the WebTransport HTTP/2 port; so is a partial request line and an HTTP/2 connection that requests nothing', async () => {
    const socketPath = await start({ handshakeTimeoutMs: 300 });
    const wsPort = port(fx.server.wsUrl);
    const wtPort = port(fx.server.wtUrl!);
    const cases: [string, Raw][] = [
      ['silent on the HTTP port', await rawConnection(wsPort)],
      ['a partial request line on the HTTP port', await rawConnection(wsPort, 'GET /callwire HT')],
      ['silent on the unix socket', await rawConnection(socketPath)],
      ['a partial request line on the unix socket', await rawConnection(socketPath, 'POST /call/')],
      ['silent on the WebTransport port (no TLS hello)', await rawConnection(wtPort)],
    ];
    opened.push(...cases.map(([, raw]) => raw));
    // TLS and HTTP/2's preface done, no stream: what Node's TLS handshake timeout no longer covers.
    const h2 = http2Connect(`https://127.0.0.1:${wtPort}`, { rejectUnauthorized: false });
    h2.on('error', () => undefined);
    const h2Closed = new Promise<boolean>((resolve) => h2.once('close', () => resolve(true)));
    await new Promise<void>((resolve) => h2.once('connect', () => resolve()));
    for (const [what, raw] of cases) expect({ what, closed: await closesWithin(raw, 5000) }).toEqual({ what, closed: true });
    expect(await Promise.race([h2Closed, sleep(5000).then(() => false)])).toBe(true);
    // Nothing was answered to a connection that completed no request.
    expect(cases.map(([, raw]) => raw.received).slice(0, 4)).toEqual([0, 0, 0, 0]);
    const client = await fx.client(transportCases[0]!);
    expect((await stats(client)).silentConnectionsClosed).toBe(6);
  });

  it('a connection that completed its upgrade, session request or request is not closed by the bound', async () => {
    await start({ handshakeTimeoutMs: 300 });
    const ws = await fx.client(transportCases[0]!);
    const wt = await fx.client(transportCases[2]!);
    const unix = await fx.client({ name: 'unix', url: (s) => s.unixUrl!, options: () => ({}) });
    // An HTTP request answered on a kept-alive connection: the next one on it is not cut by the bound.
    const keptAlive = await rawConnection(port(fx.server.wsUrl), 'GET /nothing HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    opened.push(keptAlive);
    await sleep(1000); // over three bounds
    for (const client of [ws, wt, unix]) expect(await client.call('test/echo', { text: 'still here' })).toEqual({ text: 'still here' });
    expect(keptAlive.received).toBeGreaterThan(0);
    expect(await closesWithin(keptAlive, 0)).toBe(false);
    expect((await stats(ws)).silentConnectionsClosed).toBe(0);
  });

  it('0 turns the bound off', async () => {
    await start({ handshakeTimeoutMs: 0 });
    const silent = await rawConnection(port(fx.server.wsUrl));
    opened.push(silent);
    expect(await closesWithin(silent, 800)).toBe(false);
  });
});

describe('maxConnections (spec §9)', () => {
  const fx = new ServerFixture();
  const opened: Raw[] = [];
  afterEach(async () => {
    for (const raw of opened.splice(0)) raw.socket.destroy();
    await fx.stop();
  });

  it('the connection over maxConnections, on any listener, is closed unread; services/stats counts it; a freed place admits the next', async () => {
    await fx.start({ maxConnections: 3, handshakeTimeoutMs: 0 });
    const wsPort = Number(new URL(fx.server.wsUrl).port);
    const wtPort = Number(new URL(fx.server.wtUrl!).port);
    const client = await fx.client(transportCases[0]!);
    const first = await rawConnection(wsPort);
    const second = await rawConnection(wtPort);
    opened.push(first, second);
    expect((await stats(client)).openConnections).toBe(3);
    // A whole request on the refused connection: were it read, it would be answered (404).
    const refusedHttp = await rawConnection(wsPort, 'GET /nothing HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    const refusedWt = await rawConnection(wtPort);
    opened.push(refusedHttp, refusedWt);
    expect(await closesWithin(refusedHttp, 5000)).toBe(true);
    expect(await closesWithin(refusedWt, 5000)).toBe(true);
    expect(refusedHttp.received).toBe(0);
    expect(await closesWithin(first, 0)).toBe(false);
    const after = await stats(client);
    expect({ open: after.openConnections, refused: after.refusedConnections }).toEqual({ open: 3, refused: 2 });
    first.socket.destroy();
    await first.closed;
    // The server sees the close on its own time: the next client is admitted once it has.
    let next: Client | undefined;
    for (let attempt = 0; attempt < 50 && !next; attempt++) {
      next = await fx.client(transportCases[0]!).catch(() => sleep(50).then(() => undefined));
    }
    expect(await next!.call('test/echo', { text: 'x' })).toEqual({ text: 'x' });
  });
});

describe.skipIf(!hasHttp3)(skipTitle('maxConnections over HTTP/3 (spec §9)', http3Missing), () => {
  const fx = new ServerFixture();
  const opened: Raw[] = [];
  afterEach(async () => {
    for (const raw of opened.splice(0)) raw.socket.destroy();
    await fx.stop();
  });

  it('an HTTP/3 session takes a place like a TCP connection: refused when none is free, admitted once one is', async () => {
    await fx.start({ maxConnections: 2, handshakeTimeoutMs: 0, http3: true });
    const client = await fx.client(transportCases[0]!);
    const silent = await rawConnection(Number(new URL(fx.server.wsUrl).port));
    opened.push(silent);
    const h3 = transportCases[4]!;
    // Deno's WebTransport server accepts a session before the edge can ask us: the edge then closes it.
    const refused = await fx.client(h3).catch(() => undefined);
    if (refused) expect(await Promise.race([refused.closed.then(() => true), sleep(5000).then(() => false)])).toBe(true);
    expect((await stats(client)).refusedConnections).toBe(1);
    silent.socket.destroy();
    await silent.closed;
    let session: Client | undefined;
    for (let attempt = 0; attempt < 50 && !session; attempt++) session = await fx.client(h3).catch(() => sleep(50).then(() => undefined));
    expect(await session!.call('test/echo', { text: 'h3' })).toEqual({ text: 'h3' });
  });
});
