import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawConnect, type RawPeer } from '../../src/conformance/index.js';
import { startServer, type RunningServer } from '../../src/server/index.js';

/**
 * A client written only to the reference protocol (spec §13): it connects to the
 * reference's path, offers no subprotocol, sends compact JSON in binary messages,
 * puts a leading slash on operation ids and reads `op_type`. It must just work.
 */
async function referencePeer(url: string): Promise<RawPeer> {
  const peer = await rawConnect(url, { codec: 'json', subprotocols: [] }); // no subprotocol offered
  expect(peer.protocol).toBe('');
  return peer;
}

/** The call's frames as they came on the wire, once one of `type` has come. */
async function until(peer: RawPeer, id: string, type: string): Promise<Record<string, unknown>[]> {
  await peer.next((f) => f.id === id && f.type === type);
  // The answer comes in the peer's own codec: JSON it can parse, not msgpack, and in binary messages.
  expect(peer.events.all().filter((e) => e.kind === 'undecodable')).toEqual([]);
  return peer.events.all().flatMap((e) => (e.kind === 'frame' && e.id === id ? [e.value as Record<string, unknown>] : []));
}

describe('a peer that speaks only the reference wire', () => {
  let server: RunningServer;
  let peer: RawPeer;
  beforeAll(async () => {
    server = await startServer({ port: 0, webTransportPort: false, docker: false, conformance: true });
    peer = await referencePeer(server.wsUrl.replace('/callwire', '/alknet/call'));
  });
  afterAll(async () => {
    await peer.close();
    await server.close();
  });

  it('discovers operations with op_type, answered in JSON', async () => {
    const id = randomUUID();
    peer.sendValue({ type: 'call.requested', id, payload: { operationId: '/services/list', input: null } });
    const [answer] = await until(peer, id, 'call.responded');
    const operations = (answer as { payload: { output: { operations: { name: string; op_type: string; kind: string }[] } } }).payload.output.operations;
    expect(operations).toContainEqual(expect.objectContaining({ name: 'conformance/count', op_type: 'subscription', kind: 'subscription' }));
    expect(operations).toContainEqual(expect.objectContaining({ name: 'services/list', op_type: 'query' }));
  });

  it('runs a subscription to its empty call.completed, and an error has the reference shape', async () => {
    const id = randomUUID();
    peer.sendValue({ type: 'call.requested', id, payload: { operationId: '/conformance/count', input: { count: 3 } } });
    const frames = await until(peer, id, 'call.completed');
    expect(frames.map((f) => f['type'])).toEqual(['call.responded', 'call.responded', 'call.responded', 'call.completed']);
    expect(frames.at(-1)).toEqual({ type: 'call.completed', id, payload: {} });
    const bad = randomUUID();
    peer.sendValue({ type: 'call.requested', id: bad, payload: { operationId: '/no/such/op' } });
    const [error] = await until(peer, bad, 'call.error');
    expect(error).toEqual({ type: 'call.error', id: bad, payload: { code: 'NOT_FOUND', message: 'unknown operation: /no/such/op', retryable: false } });
  });

  it('a peer that offers no subprotocol and sends msgpack still gets msgpack (WS-5)', async () => {
    const msgpack = await rawConnect(server.wsUrl, { codec: 'msgpack', subprotocols: [] });
    msgpack.sendValue({ type: 'call.requested', id: 'm', payload: { operationId: 'conformance/echo', input: { value: 1 } } });
    // The peer reads what comes as msgpack: anything else would be undecodable, not this frame.
    expect(await msgpack.events.take(() => true, 5000)).toEqual({ kind: 'frame', id: 'm', value: { type: 'call.responded', id: 'm', payload: { output: { value: 1 } } } });
    await msgpack.close();
  });
});
