import type { AddressInfo, Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket, WebSocketServer } from 'ws';
import { Keepalive } from '../../src/transports/keepalive.js';
import { until } from '../support/wait.js';

const INTERVAL_MS = 100;

/** The server's end of one connection: its socket, and a send that tells the keepalive, as the WebSocket transport's does. */
interface ServerSide {
  readonly ws: WebSocket;
  send(data: Buffer, sent?: () => void): void;
}

/** A server whose every connection the keepalive watches, and what became of each. */
async function watchedServer(): Promise<{ url: string; server: WebSocketServer; dropped: () => number; connected: Promise<ServerSide> }> {
  let dropped = 0;
  const keepalive = new Keepalive(INTERVAL_MS, () => (dropped += 1));
  const server = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  await new Promise((resolve) => server.once('listening', resolve));
  const connected = new Promise<ServerSide>((resolve) =>
    server.once('connection', (ws, req) => {
      keepalive.track(ws, req.socket);
      ws.once('close', () => keepalive.untrack(ws));
      resolve({
        ws,
        send(data, sent) {
          ws.send(data, () => sent?.());
          keepalive.sent(ws, data.byteLength);
        },
      });
    }),
  );
  return { url: `ws://127.0.0.1:${(server.address() as AddressInfo).port}`, server, dropped: () => dropped, connected };
}

/** The client's end of the TCP connection, to read it slowly or not at all. */
function clientSocket(ws: WebSocket): Socket {
  return (ws as unknown as { _socket: Socket })._socket;
}

/** Resolves when the client's connection ends, with how. */
function closed(ws: WebSocket): Promise<number> {
  return new Promise((resolve) => ws.once('close', (code) => resolve(code)));
}

const MESSAGE_BYTES = 64 * 1024;
/** Far more than the loopback's kernel buffers hold, so the server's pings wait behind it. */
const FLOOD_MESSAGES = 512;
const WAITING_MESSAGES = 16;

describe('WebSocket keepalive (§5.5)', () => {
  const servers: WebSocketServer[] = [];
  afterEach(async () => {
    for (const s of servers.splice(0)) await new Promise((resolve) => s.close(resolve));
  });

  it('keeps a slow reader of a large stream, whose pings wait behind megabytes it has not read yet, to the end', async () => {
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
    // One chunk every few milliseconds: alive throughout, but slower than the server writes, so
    // the kernel's buffers fill and each ping waits behind megabytes for many intervals.
    const socket = clientSocket(client);
    socket.on('data', () => socket.pause());
    const reader = setInterval(() => socket.resume(), 2);
    // The server's pump keeps at most a call's buffer (1 MiB, BP-1) waiting in its process, as here.
    const chunk = Buffer.alloc(MESSAGE_BYTES, 7);
    let sent = 0;
    let waiting = 0;
    const pump = (): void => {
      for (; waiting < WAITING_MESSAGES && sent < FLOOD_MESSAGES; sent++, waiting++)
        serverSide.send(chunk, () => {
          waiting -= 1;
          pump();
        });
    };
    pump();
    const dropEnds = closed(client).then((code) => {
      throw new Error(`closed ${code} after ${received} of ${FLOOD_MESSAGES} messages`);
    });
    try {
      await Promise.race([all, dropEnds]);
    } finally {
      clearInterval(reader);
    }
    expect(received).toBe(FLOOD_MESSAGES);
    expect(dropped()).toBe(0);
    expect(client.readyState).toBe(WebSocket.OPEN);
    client.close();
  });

  it('drops a reader that stops with output queued for it, once that output would have been read at the slowest speed waited for', async () => {
    const { url, server, dropped, connected } = await watchedServer();
    servers.push(server);
    const client = new WebSocket(url);
    await new Promise((resolve) => client.once('open', resolve));
    const serverSide = await connected;
    const end = closed(client);
    clientSocket(client).pause();
    const stoppedAt = Date.now();
    // 256 KiB ahead of the ping they bring: read at 1 MiB/s in 250 ms, so due that long after most of an interval.
    for (let i = 0; i < 4; i++) serverSide.send(Buffer.alloc(MESSAGE_BYTES, 7));
    await expect.poll(() => dropped(), { timeout: INTERVAL_MS * 30, interval: 10 }).toBe(1);
    expect(Date.now() - stoppedAt).toBeGreaterThanOrEqual(INTERVAL_MS * 0.9 + 250);
    clientSocket(client).resume();
    expect(await end).toBe(1006);
  });

  it('drops a reader that freezes in the middle of a large stream within a few intervals, not after the megabytes queued for it', async () => {
    const { url, server, dropped, connected } = await watchedServer();
    servers.push(server);
    const client = new WebSocket(url);
    await new Promise((resolve) => client.once('open', resolve));
    const serverSide = await connected;
    let received = 0;
    client.on('message', () => (received += 1));
    const end = closed(client);
    const chunk = Buffer.alloc(MESSAGE_BYTES, 7);
    let waiting = 0;
    // Until the server drops it: a send on a closed socket calls back at once, which would spin here.
    const pump = (): void => {
      for (; waiting < WAITING_MESSAGES && serverSide.ws.readyState === WebSocket.OPEN; waiting++)
        serverSide.send(chunk, () => {
          waiting -= 1;
          pump();
        });
    };
    pump();
    // Read at full speed for a while, so the kernel's buffers grow, then freeze: megabytes wait for it.
    await until(() => received >= 256, 'the reader under way', 10_000);
    clientSocket(client).pause();
    const frozenAt = Date.now();
    await expect.poll(() => dropped(), { timeout: 10_000, interval: 10 }).toBe(1);
    const after = Date.now() - frozenAt;
    // Pings every 256 KiB of output: the first one it did not reach has at most that much before it.
    expect(after).toBeLessThan(INTERVAL_MS * 20);
    clientSocket(client).resume();
    expect(await end).toBe(1006);
  });

  it('drops a peer that reads but never answers a ping within two intervals, and keeps one that answers', async () => {
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
    const openedAt = Date.now();
    expect(await end).toBe(1006);
    expect(second.dropped()).toBe(1);
    expect(Date.now() - openedAt).toBeLessThan(INTERVAL_MS * 2 + 1000);
  });
});
