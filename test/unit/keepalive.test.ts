import type { AddressInfo, Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket, WebSocketServer } from 'ws';
import { Keepalive } from '../../src/transports/keepalive.js';
import { until, within } from '../support/wait.js';

const INTERVAL_MS = 100;
/** How soon a connection the keepalive dropped must be closed: two intervals (§5.5), with slack for a loaded machine. */
const DROPPED_WITHIN_MS = 2000;

/** A server whose every connection the keepalive watches, and how many it dropped. */
async function watchedServer(): Promise<{ url: string; server: WebSocketServer; dropped: () => number; connected: Promise<WebSocket> }> {
  let dropped = 0;
  const keepalive = new Keepalive(INTERVAL_MS, () => (dropped += 1));
  const server = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  await new Promise((resolve) => server.once('listening', resolve));
  const connected = new Promise<WebSocket>((resolve) =>
    server.once('connection', (ws, req) => {
      keepalive.track(ws, req.socket);
      ws.once('close', () => keepalive.untrack(ws));
      resolve(ws);
    }),
  );
  return { url: `ws://127.0.0.1:${(server.address() as AddressInfo).port}`, server, dropped: () => dropped, connected };
}

/** The client's end of the TCP connection, to read it slowly or not at all. */
function clientSocket(ws: WebSocket): Socket {
  return (ws as unknown as { _socket: Socket })._socket;
}

/** Resolves when the client's connection ends, with its close code. */
function closed(ws: WebSocket): Promise<number> {
  return new Promise((resolve) => ws.once('close', (code) => resolve(code)));
}

const MESSAGE_BYTES = 64 * 1024;
/** Far more than the loopback's kernel buffers hold, so the server's pings wait behind megabytes. */
const FLOOD_MESSAGES = 512;
/** What the server keeps waiting in its own process, as the pump's bound (BP-1) keeps it. */
const WAITING_MESSAGES = 16;

/** Sends `chunk` as fast as the socket takes it, at most WAITING_MESSAGES waiting, while `more()`. */
function pump(ws: WebSocket, chunk: Buffer, more: (sent: number) => boolean): void {
  let sent = 0;
  let waiting = 0;
  const fill = (): void => {
    // A send on a closed socket calls back at once, which would spin here.
    for (; waiting < WAITING_MESSAGES && ws.readyState === WebSocket.OPEN && more(sent); sent++, waiting++)
      ws.send(chunk, () => {
        waiting -= 1;
        fill();
      });
  };
  fill();
}

describe('WebSocket keepalive (§5.5, KA-1)', () => {
  const servers: WebSocketServer[] = [];
  afterEach(async () => {
    // A connection a failed test left open would hold close() until the hook's timeout.
    for (const s of servers.splice(0)) {
      for (const ws of s.clients) ws.terminate();
      await new Promise((resolve) => s.close(resolve));
    }
  });

  it('keeps a slow reader of a large stream to the end, though its pongs wait behind megabytes for many intervals', async () => {
    const { url, server, dropped, connected } = await watchedServer();
    servers.push(server);
    const client = new WebSocket(url);
    await new Promise((resolve) => client.once('open', resolve));
    const serverSide = await connected;
    let received = 0;
    const all = new Promise<void>((resolve) =>
      client.on('message', () => {
        if (++received === FLOOD_MESSAGES) resolve();
      }),
    );
    // One chunk every few milliseconds: alive throughout, but slower than the server writes, so the
    // kernels' buffers fill and each ping waits behind them; the client itself sends nothing else.
    const socket = clientSocket(client);
    socket.on('data', () => socket.pause());
    const reader = setInterval(() => socket.resume(), 2);
    pump(serverSide, Buffer.alloc(MESSAGE_BYTES, 7), (sent) => sent < FLOOD_MESSAGES);
    const dropEnds = closed(client).then((code) => {
      throw new Error(`closed ${code} after ${received} of ${FLOOD_MESSAGES} messages`);
    });
    try {
      await within(Promise.race([all, dropEnds]), 30_000, `the slow reader's ${FLOOD_MESSAGES} messages`);
    } finally {
      clearInterval(reader);
    }
    expect(received).toBe(FLOOD_MESSAGES);
    expect(dropped()).toBe(0);
    expect(client.readyState).toBe(WebSocket.OPEN);
    client.close();
  });

  it('drops a reader that freezes in the middle of a large stream, once the kernels take no more of it', async () => {
    const { url, server, dropped, connected } = await watchedServer();
    servers.push(server);
    const client = new WebSocket(url);
    await new Promise((resolve) => client.once('open', resolve));
    const serverSide = await connected;
    let received = 0;
    client.on('message', () => (received += 1));
    const end = closed(client);
    pump(serverSide, Buffer.alloc(MESSAGE_BYTES, 7), () => true);
    // Read at full speed for a while, so the kernel's buffers grow, then freeze: megabytes wait for it.
    await until(() => received >= 256, 'the reader under way', 10_000);
    clientSocket(client).pause();
    await expect.poll(() => dropped(), { timeout: 10_000, interval: 10 }).toBe(1);
    clientSocket(client).resume();
    expect(await within(end, DROPPED_WITHIN_MS, 'the dropped reader closed')).toBe(1006);
  });

  it('drops a frozen peer that the server goes on writing to (a push stream): bytes waiting in the server are not bytes taken', async () => {
    const { url, server, dropped, connected } = await watchedServer();
    servers.push(server);
    const client = new WebSocket(url);
    await new Promise((resolve) => client.once('open', resolve));
    const serverSide = await connected;
    const end = closed(client);
    clientSocket(client).pause();
    // Sends on, whether or not the last one left, until the server drops the peer.
    const chunk = Buffer.alloc(MESSAGE_BYTES, 7);
    const pusher = setInterval(() => serverSide.readyState === WebSocket.OPEN && serverSide.send(chunk), 5);
    try {
      await expect.poll(() => dropped(), { timeout: 10_000, interval: 10 }).toBe(1);
    } finally {
      clearInterval(pusher);
    }
    clientSocket(client).resume();
    expect(await within(end, DROPPED_WITHIN_MS, 'the dropped peer closed')).toBe(1006);
  });

  it('drops an idle peer that never answers a ping, and keeps an idle one that answers', async () => {
    const { url, server, dropped, connected } = await watchedServer();
    servers.push(server);
    const answering = new WebSocket(url);
    await connected;
    await new Promise((resolve) => setTimeout(resolve, INTERVAL_MS * 5));
    expect(dropped()).toBe(0);
    expect(answering.readyState).toBe(WebSocket.OPEN);
    answering.close();

    const second = await watchedServer();
    servers.push(second.server);
    const mute = new WebSocket(second.url, { autoPong: false });
    const end = closed(mute);
    await second.connected;
    // A ping, an interval with no pong, and the round after it: two intervals.
    expect(await within(end, DROPPED_WITHIN_MS, 'the peer that answers no ping dropped')).toBe(1006);
    expect(second.dropped()).toBe(1);
  });
});
