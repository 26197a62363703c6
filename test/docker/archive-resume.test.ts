import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type Client, type ConnectionEvent } from '../../src/client-node/index.js';
import { dockerCli, DockerFixture } from '../support/docker.js';
import { ServerFixture } from '../support/server-fixture.js';
import { TcpProxy } from '../support/tcp-proxy.js';

const MiB = 1024 * 1024;
const SIZE = 96 * MiB;
const sha256 = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');

/**
 * A copy survives a cut connection as an exec does (spec §12, ARC-6; §4.9): the SDK over a
 * real WebSocket through a TCP relay that loses every connection in the middle of the
 * copy and turns new ones away for a while. The get's tar is docker cp's, byte for byte;
 * the put's file in the container is the original, and each terminal frame counts every
 * byte once.
 */
describe('archive copies across a cut connection', () => {
  const docker = new DockerFixture();
  const fx = new ServerFixture();
  let proxy: TcpProxy;
  let client: Client;
  const events: ConnectionEvent['type'][] = [];
  let c = '';
  let reference: Buffer;
  beforeAll(async () => {
    await fx.start({ docker: docker.engine, webTransportPort: false });
    proxy = await new TcpProxy().start(Number(new URL(fx.server.wsUrl).port));
    client = await connect(proxy.via(fx.server.wsUrl), { resume: { graceMs: 30_000 } });
    client.on('reconnecting', (e) => events.push(e.type));
    client.on('resumed', (e) => events.push(e.type));
    c = await docker.container();
    const made = await dockerCli(['exec', c, 'sh', '-c', `head -c ${SIZE} /dev/urandom > /tmp/big && mkdir /in`]);
    expect(made.code).toBe(0);
    reference = (await dockerCli(['cp', `${c}:/tmp/big`, '-'])).stdout;
  }, 120_000);
  afterAll(async () => {
    await client?.close();
    await proxy?.stop();
    await fx.stop();
    await docker.cleanup();
  });

  it('get: cut for 1 s a third of the way in, the tar is whole and docker cp\'s', async () => {
    events.length = 0;
    proxy.cutAfterBytes(SIZE / 3, 1000, 'down');
    const parts: Uint8Array[] = [];
    let terminal: unknown;
    for await (const item of client.iterate<{ data?: Uint8Array; terminal?: true }>('docker/container/archive/get', { containerId: c, path: '/tmp/big' })) {
      if (item.data) parts.push(item.data);
      else if (item.terminal) terminal = item;
    }
    const tar = Buffer.concat(parts);
    expect(proxy.cuts).toBeGreaterThanOrEqual(1);
    expect(events).toEqual(['reconnecting', 'resumed']);
    expect({ bytes: tar.byteLength, sha256: sha256(tar) }).toEqual({ bytes: reference.byteLength, sha256: sha256(reference) });
    expect(terminal).toEqual({ terminal: true, bytes: reference.byteLength, sha256: sha256(reference) });
  }, 180_000);

  it('put: cut for 1 s a third of the way in, the file in the container is whole', async () => {
    events.length = 0;
    const cutsBefore = proxy.cuts;
    proxy.cutAfterBytes(SIZE / 3, 1000, 'up');
    const input = (async function* () {
      for (let at = 0; at < reference.byteLength; at += 256 * 1024) yield { data: reference.subarray(at, at + 256 * 1024) };
    })();
    let terminal: unknown;
    for await (const item of client.iterate('docker/container/archive/put', { containerId: c, path: '/in' }, { input })) terminal = item;
    expect(proxy.cuts).toBe(cutsBefore + 1);
    expect(events).toEqual(['reconnecting', 'resumed']);
    expect(terminal).toEqual({ terminal: true, bytes: reference.byteLength, sha256: sha256(reference) });
    const sums = (await dockerCli(['exec', c, 'sha256sum', '/tmp/big', '/in/big'])).stdout.toString().trim().split('\n').map((line) => line.split(/\s+/)[0]);
    expect(sums[1]).toBe(sums[0]);
  }, 180_000);
});
