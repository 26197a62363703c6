import { connect, createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TcpProxy } from './tcp-proxy.js';
import { until } from './wait.js';

/** What a client of the relay saw: the bytes it read, and how the connection ended. */
interface Seen {
  bytes: number;
  text: string;
  ended: Promise<{ error?: string }>;
}

function dial(port: number, send?: Buffer): { socket: Socket; seen: Seen } {
  const socket = connect(port, '127.0.0.1');
  const seen: Seen = {
    bytes: 0,
    text: '',
    ended: new Promise((resolve) => {
      let error: string | undefined;
      socket.on('error', (e: NodeJS.ErrnoException) => (error = e.code ?? e.message));
      socket.on('close', () => resolve(error ? { error } : {}));
    }),
  };
  socket.on('data', (d: Buffer) => {
    seen.bytes += d.length;
    if (seen.text.length < 100) seen.text += d.toString('latin1');
  });
  if (send) socket.write(send);
  return { socket, seen };
}

/**
 * The relay the resume tests cut: a cut ends every connection and turns new ones
 * away for its duration, then the relay accepts again; a cut armed on a byte count
 * lands in the middle of a stream, in the direction asked, once.
 */
describe('TcpProxy: cuts for a while, and cuts after a byte count', () => {
  let target: Server;
  let targetPort = 0;
  /** The target's side of every connection, in order. */
  const targetSides: Socket[] = [];
  beforeAll(async () => {
    // "stream <n>" answers n bytes; "echo …" answers its own line; "count" answers, at the end, how many bytes it read.
    target = createServer((s) => {
      targetSides.push(s);
      s.on('error', () => undefined);
      let read = 0;
      let first = true;
      s.on('data', (d: Buffer) => {
        read += d.length;
        if (!first) return;
        first = false;
        const line = d.toString('latin1');
        const stream = /^stream (\d+)/.exec(line);
        if (stream) s.end(Buffer.alloc(Number(stream[1]), 0x61));
        else if (line.startsWith('echo ')) s.end(line);
      });
      s.on('end', () => s.end(`read ${read}`));
    });
    await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
    targetPort = (target.address() as AddressInfo).port;
  });
  afterAll(() => new Promise((resolve) => target.close(resolve)));

  it('cutFor: the open connection ends at once; a new one is refused during the cut and relayed after it', async () => {
    const proxy = await new TcpProxy().start(targetPort);
    try {
      const open = dial(proxy.port, Buffer.from('x'));
      await new Promise((resolve) => setTimeout(resolve, 50));
      const restored = proxy.cutFor(400);
      await open.seen.ended;
      const during = dial(proxy.port, Buffer.from('echo during'));
      expect(await during.seen.ended).toEqual({ error: 'ECONNRESET' });
      expect(during.seen.bytes).toBe(0);
      await restored;
      const after = dial(proxy.port, Buffer.from('echo after'));
      await after.seen.ended;
      expect(after.seen.text).toBe('echo after');
      expect({ accepted: proxy.accepted, refused: proxy.refused, cuts: proxy.cuts }).toEqual({ accepted: 2, refused: 1, cuts: 1 });
    } finally {
      await proxy.stop();
    }
  });

  it("cutFor 'client': the client's side ends, the server's stays open (it has not noticed) until the relay stops", async () => {
    const proxy = await new TcpProxy().start(targetPort);
    let stale: Socket | undefined;
    try {
      const first = targetSides.length;
      const open = dial(proxy.port, Buffer.from('x'));
      await until(() => targetSides.length > first, 'the target connected');
      stale = targetSides[first]!;
      const restored = proxy.cutFor(300, 'client');
      await open.seen.ended;
      await restored;
      const after = dial(proxy.port, Buffer.from('echo after'));
      await after.seen.ended;
      expect(after.seen.text).toBe('echo after');
      expect(stale.closed || stale.readableEnded, 'the server side of the cut connection ended').toBe(false);
      expect(proxy.cuts).toBe(1);
    } finally {
      await proxy.stop();
    }
    await until(() => stale?.closed === true, 'the stale side closed with the relay');
  });

  it('a server that is not there (or goes away) ends the client’s connection through the relay', async () => {
    const gone = createServer();
    await new Promise<void>((resolve) => gone.listen(0, '127.0.0.1', resolve));
    const port = (gone.address() as AddressInfo).port;
    await new Promise((resolve) => gone.close(resolve));
    const proxy = await new TcpProxy().start(port);
    try {
      const attempt = dial(proxy.port, Buffer.from('echo nobody'));
      await attempt.seen.ended;
      expect(attempt.seen.bytes).toBe(0);
    } finally {
      await proxy.stop();
    }
  });

  it('cutAfterBytes down: a 4 MB answer stops short of its end and past the count; the relay cuts once, then relays again', async () => {
    const proxy = await new TcpProxy().start(targetPort);
    try {
      proxy.cutAfterBytes(1_000_000, 300);
      const first = dial(proxy.port, Buffer.from('stream 4000000'));
      await first.seen.ended;
      expect(proxy.cuts).toBe(1);
      expect(first.seen.bytes).toBeLessThan(1_000_000);
      expect(first.seen.bytes).toBeGreaterThan(0);
      await proxy.whenRestored();
      // Disarmed after it fired: a second stream crosses whole.
      const second = dial(proxy.port, Buffer.from('stream 4000000'));
      await second.seen.ended;
      expect(second.seen.bytes).toBe(4_000_000);
      expect(proxy.cuts).toBe(1);
    } finally {
      await proxy.stop();
    }
  });

  it('cutAfterBytes up: counts what the client sends, not what it receives', async () => {
    const proxy = await new TcpProxy().start(targetPort);
    try {
      proxy.cutAfterBytes(1_000_000, 300, 'up');
      const big = dial(proxy.port);
      big.socket.end(Buffer.alloc(3_000_000, 0x62));
      await big.seen.ended;
      expect(proxy.cuts).toBe(1);
      expect(big.seen.text).not.toMatch(/read 3000000/);
      expect(proxy.relayed.up).toBeLessThan(1_000_000);
    } finally {
      await proxy.stop();
    }
  });
});
