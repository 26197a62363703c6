import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket, WebSocketServer } from 'ws';
import { writeBinaryMessage } from '../../src/transports/websocket-frame.js';

/**
 * The server's own frame writer (a message's head and body without joining them),
 * read by a real `ws` client, which checks every frame as RFC 6455 says. Lengths on
 * each side of the three length encodings (7 bit, 16 bit, 64 bit).
 */
const ARRIVAL_MS = 5000;

describe('writeBinaryMessage: one binary message from two pieces, read by a ws client', () => {
  let http: Server;
  let wss: WebSocketServer;
  let serverSide: Promise<{ ws: WebSocket; socket: Socket }>;
  let client: WebSocket;
  const received: Buffer[] = [];
  const arrivals: (() => void)[] = [];

  beforeAll(async () => {
    http = createServer();
    wss = new WebSocketServer({ server: http, perMessageDeflate: false });
    serverSide = new Promise((resolve) => wss.once('connection', (ws, req) => resolve({ ws, socket: req.socket })));
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    client = new WebSocket(`ws://127.0.0.1:${(http.address() as AddressInfo).port}`);
    client.binaryType = 'nodebuffer';
    client.on('message', (data: Buffer, isBinary) => {
      expect(isBinary).toBe(true);
      received.push(Buffer.from(data));
      arrivals.shift()?.();
    });
    client.on('close', (code, reason) => {
      closed = new Error(`the client closed the connection: ${code} ${reason.toString()}`);
      for (const wake of arrivals.splice(0)) wake();
    });
    await new Promise((resolve) => client.once('open', resolve));
  });
  afterAll(async () => {
    client.terminate();
    wss.close();
    await new Promise((resolve) => http.close(resolve));
  });

  // A frame the client cannot read closes the connection: the test fails then, not at its timeout.
  let closed: Error | undefined;
  const next = (count: number): Promise<Buffer[]> =>
    new Promise((resolve, reject) => {
      const start = received.length;
      // A misframed message reads as a longer one, so the client may wait for bytes that never come.
      const timer = setTimeout(() => reject(new Error(`${count} message(s) did not arrive within ${ARRIVAL_MS} ms`)), ARRIVAL_MS);
      const check = (): void => {
        if (closed) reject(closed);
        else if (received.length - start >= count) resolve(received.slice(start, start + count));
        else return void arrivals.push(check);
        clearTimeout(timer);
      };
      check();
    });

  const sizes = [0, 1, 125, 126, 127, 65535, 65536, 65537, 300_000];
  for (const total of sizes) {
    for (const headBytes of [0, 1, 40]) {
      if (headBytes > total) continue;
      it(`${total} bytes, ${headBytes} of them in the head`, async () => {
        const { socket } = await serverSide;
        const whole = randomBytes(total);
        const arrived = next(1);
        const written = new Promise<void>((resolve, reject) =>
          writeBinaryMessage(socket, whole.subarray(0, headBytes), whole.subarray(headBytes), (error) => (error ? reject(error) : resolve())),
        );
        await written;
        const [message] = await arrived;
        expect(message!.equals(whole)).toBe(true);
      });
    }
  }

  it("keeps its place among ws's own messages", async () => {
    const { ws, socket } = await serverSide;
    const messages = [randomBytes(70_000), randomBytes(200), randomBytes(65_536), randomBytes(10)];
    const arrived = next(messages.length);
    ws.send(messages[0]!);
    writeBinaryMessage(socket, messages[1]!.subarray(0, 7), messages[1]!.subarray(7), () => undefined);
    ws.send(messages[2]!);
    writeBinaryMessage(socket, messages[3]!.subarray(0, 3), messages[3]!.subarray(3), () => undefined);
    const got = await arrived;
    got.forEach((message, i) => expect(message.equals(messages[i]!)).toBe(true));
  });
});
