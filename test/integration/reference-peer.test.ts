import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startServer, type RunningServer } from '../../src/server/index.js';

/**
 * A client written only to the reference protocol (spec §13): it connects to the
 * reference's path, offers no subprotocol, sends compact JSON in binary messages,
 * puts a leading slash on operation ids and reads `op_type`. It must just work.
 */
class ReferencePeer {
  private readonly frames: Record<string, unknown>[] = [];
  private waiters: (() => void)[] = [];
  constructor(readonly ws: WebSocket) {
    ws.on('message', (data: Buffer, isBinary) => {
      expect(isBinary).toBe(true);
      // The answer comes in the peer's own codec: JSON it can parse, not msgpack.
      this.frames.push(JSON.parse(data.toString('utf8')) as Record<string, unknown>);
      for (const wake of this.waiters.splice(0)) wake();
    });
  }
  static async open(url: string): Promise<ReferencePeer> {
    const ws = new WebSocket(url); // no subprotocol offered
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    expect(ws.protocol).toBe('');
    return new ReferencePeer(ws);
  }
  send(frame: unknown): void {
    this.ws.send(Buffer.from(JSON.stringify(frame)), { binary: true });
  }
  async until(id: string, type: string): Promise<Record<string, unknown>[]> {
    for (;;) {
      const mine = this.frames.filter((f) => f['id'] === id);
      if (mine.some((f) => f['type'] === type)) return mine;
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }
}

describe('a peer that speaks only the reference wire', () => {
  let server: RunningServer;
  let peer: ReferencePeer;
  beforeAll(async () => {
    server = await startServer({ port: 0, webTransportPort: false, docker: false, conformance: true });
    peer = await ReferencePeer.open(server.wsUrl.replace('/callwire', '/alknet/call'));
  });
  afterAll(async () => {
    peer.ws.close();
    await server.close();
  });

  it('discovers operations with op_type, answered in JSON', async () => {
    const id = randomUUID();
    peer.send({ type: 'call.requested', id, payload: { operationId: '/services/list', input: null } });
    const [answer] = await peer.until(id, 'call.responded');
    const operations = (answer as { payload: { output: { operations: { name: string; op_type: string; kind: string }[] } } }).payload.output.operations;
    expect(operations).toContainEqual(expect.objectContaining({ name: 'conformance/count', op_type: 'subscription', kind: 'subscription' }));
    expect(operations).toContainEqual(expect.objectContaining({ name: 'services/list', op_type: 'query' }));
  });

  it('runs a subscription to its empty call.completed, and an error has the reference shape', async () => {
    const id = randomUUID();
    peer.send({ type: 'call.requested', id, payload: { operationId: '/conformance/count', input: { count: 3 } } });
    const frames = await peer.until(id, 'call.completed');
    expect(frames.map((f) => f['type'])).toEqual(['call.responded', 'call.responded', 'call.responded', 'call.completed']);
    expect(frames.at(-1)).toEqual({ type: 'call.completed', id, payload: {} });
    const bad = randomUUID();
    peer.send({ type: 'call.requested', id: bad, payload: { operationId: '/no/such/op' } });
    const [error] = await peer.until(bad, 'call.error');
    expect(error).toEqual({ type: 'call.error', id: bad, payload: { code: 'NOT_FOUND', message: 'unknown operation: /no/such/op', retryable: false } });
  });

  it('a peer that offers no subprotocol and sends msgpack still gets msgpack (WS-5)', async () => {
    const { codecs } = await import('../../src/protocol/index.js');
    const ws = new WebSocket(server.wsUrl);
    await new Promise((resolve) => ws.once('open', resolve));
    const answer = new Promise<Buffer>((resolve) => ws.once('message', resolve));
    ws.send(codecs.msgpack.encode({ type: 'call.requested', id: 'm', payload: { operationId: 'conformance/echo', input: { value: 1 } } }));
    expect(codecs.msgpack.decode(await answer)).toEqual({ type: 'call.responded', id: 'm', payload: { output: { value: 1 } } });
    ws.close();
  });
});
