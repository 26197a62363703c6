import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocketServer, type WebSocket } from 'ws';
import { connect, RpcError } from '../../src/client-node/index.js';
import { codecs, subprotocols } from '../../src/protocol/index.js';
import { until } from '../support/wait.js';

const FRAME_BYTES = 64 * 1024;
/** What the hostile peer would push if nothing stopped it. */
const FLOOD_BYTES = 128 * 1024 * 1024;
const WINDOW = 1024 * 1024;
/** CR-7: one window, the frame that crossed it, and the 64 KiB slack, with room for the envelopes around each chunk. */
const MOST_HELD = WINDOW + 2 * FRAME_BYTES + 64 * 1024 + 64 * 1024;

interface Peer {
  url: string;
  /** Bytes the peer sent per call, and whether the call was aborted to it. */
  sent: Map<string, number>;
  aborted: Set<string>;
  close: () => Promise<void>;
}

/**
 * A raw WebSocket peer that ignores credit (spec §4.8): it answers a subscription with
 * 64 KiB values as fast as its socket takes them, whatever the caller granted, until
 * the call is aborted or FLOOD_BYTES are out.
 */
function creditIgnoringPeer(): Promise<Peer> {
  const sent = new Map<string, number>();
  const aborted = new Set<string>();
  const wss = new WebSocketServer({ port: 0, host: '127.0.0.1', handleProtocols: () => subprotocols.msgpack });
  const flood = (ws: WebSocket, id: string): void => {
    const chunk = new Uint8Array(FRAME_BYTES).fill(120);
    const step = (): void => {
      while (!aborted.has(id) && (sent.get(id) ?? 0) < FLOOD_BYTES && ws.readyState === ws.OPEN && ws.bufferedAmount < 1024 * 1024) {
        const frame = codecs.msgpack.encode({ type: 'call.responded', id, payload: { output: { data: chunk } } });
        ws.send(frame);
        sent.set(id, (sent.get(id) ?? 0) + frame.byteLength);
      }
      if (!aborted.has(id) && (sent.get(id) ?? 0) < FLOOD_BYTES && ws.readyState === ws.OPEN) setTimeout(step, 1);
    };
    step();
  };
  wss.on('connection', (ws) => {
    ws.on('message', (data: Buffer) => {
      const frame = codecs.msgpack.decode(new Uint8Array(data)) as { type: string; id: string };
      if (frame.type === 'call.aborted') aborted.add(frame.id);
      if (frame.type !== 'call.requested') return;
      // CR-6: admitted, as an honest callee says it; then the output, ignoring every credit.
      ws.send(codecs.msgpack.encode({ type: 'call.credit', id: frame.id, payload: { bytes: 0 } }));
      flood(ws, frame.id);
    });
  });
  return new Promise((resolve) =>
    wss.on('listening', () =>
      resolve({ url: `ws://127.0.0.1:${(wss.address() as AddressInfo).port}/callwire`, sent, aborted, close: () => new Promise((r) => {
          for (const ws of wss.clients) ws.terminate();
          wss.close(() => r());
        }) }),
    ),
  );
}

/**
 * Issue 31, finding 7: the SDK's pulled queue was unbounded, so a server that ignores
 * credit grew the caller without bound while it read nothing. CR-7: past its credit and
 * a small slack the call ends CREDIT_EXCEEDED, and the caller holds at most a window.
 */
describe('a server that ignores the output credit the SDK granted (CR-7)', () => {
  let peer: Peer;
  beforeAll(async () => {
    peer = await creditIgnoringPeer();
  });
  afterAll(() => peer.close());

  it('a stream nobody reads ends CREDIT_EXCEEDED after about one window; the caller never held more, its RSS grew by under 64 MiB', async () => {
    const client = await connect(peer.url);
    global.gc?.();
    const rssBefore = process.memoryUsage().rss;
    const stream = client.iterate<{ data: Uint8Array }>('test/bytes', null, { id: 'flood-1', windowBytes: WINDOW })[Symbol.asyncIterator]();
    // The caller reads nothing: the SDK alone must stop the peer.
    await until(() => peer.aborted.has('flood-1') || (peer.sent.get('flood-1') ?? 0) >= FLOOD_BYTES, 'the abort, or the whole flood', 60_000);
    const rssGrowth = process.memoryUsage().rss - rssBefore;
    expect(peer.aborted.has('flood-1'), `the SDK aborted the call (the peer sent ${peer.sent.get('flood-1')} bytes)`).toBe(true);
    let held = 0;
    let ended: unknown;
    try {
      for (;;) {
        const step = await stream.next();
        if (step.done) break;
        held += step.value.data.byteLength;
      }
    } catch (error) {
      ended = error;
    }
    expect(ended).toBeInstanceOf(RpcError);
    expect((ended as RpcError).code).toBe('CREDIT_EXCEEDED');
    expect((ended as RpcError).message).toMatch(/more output than the 1048576-byte window/);
    expect(held, 'what the SDK queued for the loop').toBeLessThanOrEqual(MOST_HELD);
    expect(rssGrowth, 'the caller\'s RSS growth while the peer flooded').toBeLessThan(64 * 1024 * 1024);
    await client.close();
  }, 90_000);

});
