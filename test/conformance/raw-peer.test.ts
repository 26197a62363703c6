import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawConnect, type RawEvent, type RawPeer } from '../../src/conformance/index.js';
import { MemoryConnection } from '../../src/testing/index.js';
import { sampleRegistry } from '../support/sample-ops.js';
import { ServerFixture } from '../support/server-fixture.js';
import { sleep } from '../support/wait.js';

/** A unary call, a short stream and a refusal, each to its end. */
async function conversation(peer: RawPeer): Promise<unknown[]> {
  peer.request('u', 'test/echo', { text: 'hé' });
  await peer.nextFor('u');
  peer.request('s', 'test/ticker', { count: 3, intervalMs: 1 }, { credit: 1 << 20 });
  await peer.next((e) => e.id === 's' && e.type === 'call.completed');
  peer.request('x', 'no/such/op');
  await peer.nextFor('x');
  return ['u', 's', 'x'].flatMap((id) => peer.framesFor(id));
}

describe('the one raw peer (src/conformance/raw-peer.ts) over a WebSocket and in memory', () => {
  const fx = new ServerFixture();
  beforeAll(() => fx.start({ webTransportPort: false }).then(() => undefined));
  afterAll(() => fx.stop());

  it('the same calls give the same frames over a WebSocket and in memory', async () => {
    const socket = await rawConnect(fx.server.wsUrl, { codec: 'msgpack' });
    const memory = new MemoryConnection({ registry: sampleRegistry().registry }).client;
    const [overSocket, inMemory] = await Promise.all([conversation(socket), conversation(memory)]);
    expect(overSocket.length).toBeGreaterThanOrEqual(7);
    expect(inMemory).toEqual(overSocket);
    await Promise.all([socket.close(), memory.close()]);
  });

  it('waitForClose leaves the close for the runner to take, in memory as over a socket', async () => {
    const memory = new MemoryConnection({ registry: sampleRegistry().registry });
    memory.client.sendBytes(new Uint8Array([0x82, 0xa1]));
    expect((await memory.client.waitForClose()).code).toBe(4400);
    expect(memory.client.isClosed).toBe(true);
    expect(await memory.client.events.take((e) => e.kind === 'close', 1000)).toMatchObject({ kind: 'close', code: 4400 });
  });

  it('a pause without an end holds what arrives until resume; diverted events go to the listener and are not kept', async () => {
    const peer = await rawConnect(fx.server.wsUrl, { codec: 'msgpack' });
    peer.pause();
    peer.request('held', 'test/echo', { text: 'later' });
    await sleep(300);
    expect(peer.framesFor('held')).toEqual([]);
    peer.resume();
    expect(await peer.nextFor('held')).toMatchObject({ type: 'call.responded', payload: { output: { text: 'later' } } });

    const seen: RawEvent[] = [];
    peer.events.divert((e) => seen.push(e));
    peer.request('diverted', 'test/echo', { text: 'x' });
    await expect.poll(() => seen.length).toBe(1);
    expect(seen[0]).toMatchObject({ kind: 'frame', id: 'diverted' });
    expect(peer.framesFor('diverted')).toEqual([]);
    peer.events.divert(undefined);
    peer.request('kept', 'test/echo', { text: 'y' });
    expect(await peer.nextFor('kept')).toMatchObject({ id: 'kept' });
    await peer.close();
  });
});
