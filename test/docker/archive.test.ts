import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type Client } from '../../src/client-node/index.js';
import { dockerCli, DockerFixture, RUN_LABEL, TEST_IMAGE } from '../support/docker.js';
import { ServerFixture } from '../support/server-fixture.js';
import { until } from '../support/wait.js';

const MiB = 1024 * 1024;
const alice = { token: 'alice-token-0123456789', subject: 'alice', scopes: ['container:*'] };
const bob = { token: 'bob-token-0123456789ab', subject: 'bob', scopes: ['container:*'] };
const reader = { token: 'reader-token-0123456789', subject: 'reader', scopes: ['container:archive-get'] };

const sha256 = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');

type GetItem = { stat: { name: string; size: number; mode: number; linkTarget: string } } | { data: Uint8Array } | { terminal: true; bytes: number; sha256: string };

/** A get's items, its tar bytes joined. */
async function get(client: Client, containerId: string, path: string): Promise<{ stat: unknown; tar: Buffer; terminal: unknown; order: string[] }> {
  const parts: Uint8Array[] = [];
  const order: string[] = [];
  let stat: unknown;
  let terminal: unknown;
  for await (const item of client.iterate<GetItem>('docker/container/archive/get', { containerId, path })) {
    const kind = 'stat' in item ? 'stat' : 'data' in item ? 'data' : 'terminal';
    if (order.at(-1) !== kind) order.push(kind);
    if ('stat' in item) stat = item.stat;
    else if ('data' in item) parts.push(item.data);
    else terminal = item;
  }
  return { stat, tar: Buffer.concat(parts), terminal, order };
}

/** Puts `tar` into `path`, in pieces of `piece` bytes: the terminal frame. */
async function put(client: Client, containerId: string, path: string, tar: Uint8Array, piece = 256 * 1024): Promise<unknown> {
  const input = (async function* () {
    for (let at = 0; at < tar.byteLength; at += piece) yield { data: tar.subarray(at, at + piece) };
  })();
  let last: unknown;
  for await (const item of client.iterate('docker/container/archive/put', { containerId, path }, { input })) last = item;
  return last;
}

/** What `docker exec` prints: the container's own view, to compare with. */
async function inside(containerId: string, script: string): Promise<string> {
  const run = await dockerCli(['exec', containerId, 'sh', '-c', script]);
  if (run.code !== 0) throw new Error(`docker exec failed: ${run.stderr.toString()}`);
  return run.stdout.toString();
}

/**
 * docker/container/archive/{stat,get,put} against the real engine (spec §12, "Archives"):
 * the bytes are docker cp's own, both ways; paths reach the engine encoded and resolved
 * inside the container; refusals are PATH_NOT_FOUND, CONTAINER_NOT_FOUND, FORBIDDEN or the
 * engine's own message; every copy is an audit line.
 */
describe('archive operations on a real container', () => {
  const docker = new DockerFixture();
  const fx = new ServerFixture();
  const dir = mkdtempSync(join(tmpdir(), 'cps-audit-'));
  const auditPath = join(dir, 'audit.jsonl');
  let asAlice: Client;
  let asBob: Client;
  let asReader: Client;
  let c = '';
  const volume = `cps-${docker.runId.slice(0, 8)}`;
  beforeAll(async () => {
    await fx.start({ docker: docker.engine, webTransportPort: false, tokens: [alice, bob, reader], auditPath });
    asAlice = await connect(fx.server.wsUrl, { token: alice.token });
    asBob = await connect(fx.server.wsUrl, { token: bob.token });
    asReader = await connect(fx.server.wsUrl, { token: reader.token });
    // Alice's own container, with a 1 MiB volume to fill (a volume, not --tmpfs: the engine extracts a put beneath a tmpfs mount).
    await docker.engine.docker.createVolume({ Name: volume, Driver: 'local', DriverOpts: { type: 'tmpfs', device: 'tmpfs', o: 'size=1m' } });
    const created = await docker.engine.docker.createContainer({
      Image: TEST_IMAGE,
      name: `cps-${docker.runId.slice(0, 8)}`,
      Cmd: ['sleep', '1000000'],
      Labels: { [RUN_LABEL]: docker.runId, 'callwire.managed': 'true', 'callwire.owner': 'alice' },
      HostConfig: { NetworkMode: 'none', Binds: [`${volume}:/small`] },
    });
    await created.start();
    c = created.id;
    await inside(c, "head -c 8388608 /dev/urandom > /tmp/big && mkdir -p '/tmp/a b&c#d?e%f' /in && echo odd > '/tmp/a b&c#d?e%f/x' && ln -s /etc/hostname /tmp/link");
  }, 60_000);
  afterAll(async () => {
    await Promise.all([asAlice?.close(), asBob?.close(), asReader?.close()]);
    await fx.stop();
    await docker.cleanup();
    await docker.engine.docker.getVolume(volume).remove().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
    expect(await docker.ours()).toEqual([]);
  });

  it('stat: a file, a directory, a symlink as the engine reports them; a missing path is PATH_NOT_FOUND', async () => {
    expect(await asAlice.call('docker/container/archive/stat', { containerId: c, path: '/tmp/big' })).toMatchObject({ name: 'big', size: 8 * MiB, linkTarget: '' });
    const directory = await asAlice.call<{ mode: number }>('docker/container/archive/stat', { containerId: c, path: '/tmp' });
    expect(directory.mode >>> 31).toBe(1); // Go's ModeDir
    expect(await asAlice.call('docker/container/archive/stat', { containerId: c, path: '/tmp/link' })).toMatchObject({ name: 'link', linkTarget: '/etc/hostname' });
    await expect(asAlice.call('docker/container/archive/stat', { containerId: c, path: '/no/such' })).rejects.toMatchObject({ code: 'PATH_NOT_FOUND', details: { containerId: c, path: '/no/such' } });
    await expect(asAlice.call('docker/container/archive/stat', { containerId: 'cps-not-there', path: '/etc' })).rejects.toMatchObject({ code: 'CONTAINER_NOT_FOUND' });
    await expect(asAlice.call('docker/container/archive/stat', { containerId: c, path: 'etc/hostname' })).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    await expect(asAlice.call('docker/container/archive/stat', { containerId: c, path: '/etc\0/x' })).rejects.toMatchObject({ code: 'INVALID_INPUT' });
  });

  it('get: stat, then the tar bytes docker cp gives, then their count and sha256', async () => {
    const got = await get(asAlice, c, '/tmp/big');
    const reference = await dockerCli(['cp', `${c}:/tmp/big`, '-']);
    expect(reference.code).toBe(0);
    expect(got.order).toEqual(['stat', 'data', 'terminal']);
    expect(got.stat).toMatchObject({ name: 'big', size: 8 * MiB });
    expect(got.tar.byteLength).toBe(reference.stdout.byteLength);
    expect(sha256(got.tar)).toBe(sha256(reference.stdout));
    expect(got.terminal).toEqual({ terminal: true, bytes: got.tar.byteLength, sha256: sha256(got.tar) });
  }, 60_000);

  it('paths: encoded whole (space & # ? %), and .. resolved inside the container, never the host', async () => {
    const odd = await get(asAlice, c, '/tmp/a b&c#d?e%f/x');
    expect(odd.stat).toMatchObject({ name: 'x', size: 4 });
    expect(odd.tar.includes(Buffer.from('odd\n'))).toBe(true);
    // Up past the root: still the container's /etc/hostname (its id's first 12 characters), not this host's.
    const escaped = await get(asAlice, c, '/tmp/../../../../etc/hostname');
    expect(escaped.stat).toMatchObject({ name: 'hostname' });
    expect(escaped.tar.includes(Buffer.from(`${c.slice(0, 12)}\n`))).toBe(true);
    expect(escaped.tar.includes(readFileSync('/etc/hostname'))).toBe(false);
  }, 60_000);

  it('put: docker cp\'s tar extracted in the container, byte for byte; the terminal frame counts what was sent', async () => {
    const tar = (await dockerCli(['cp', `${c}:/tmp/big`, '-'])).stdout;
    expect(await put(asAlice, c, '/in', tar)).toEqual({ terminal: true, bytes: tar.byteLength, sha256: sha256(tar) });
    const sums = await inside(c, 'sha256sum /tmp/big /in/big');
    const [first, second] = sums.trim().split('\n').map((line) => line.split(/\s+/)[0]);
    expect(second).toBe(first);
  }, 60_000);

  it('put refusals: a missing directory is PATH_NOT_FOUND; a full disk is DOCKER_ERROR with the engine\'s message', async () => {
    const tar = (await dockerCli(['cp', `${c}:/tmp/big`, '-'])).stdout;
    await expect(put(asAlice, c, '/no/such/dir', tar)).rejects.toMatchObject({ code: 'PATH_NOT_FOUND', details: { containerId: c, path: '/no/such/dir' } });
    await expect(put(asAlice, c, '/small', tar)).rejects.toMatchObject({ code: 'DOCKER_ERROR', message: expect.stringMatching(/no space left on device/i) });
    // The server serves on, the container too.
    expect(await asAlice.call('docker/container/archive/stat', { containerId: c, path: '/small' })).toMatchObject({ name: 'small' });
  }, 60_000);

  it('ownership and scopes as the other container operations: someone else\'s container is FORBIDDEN, put needs container:archive-put', async () => {
    await expect(asBob.call('docker/container/archive/stat', { containerId: c, path: '/etc' })).rejects.toMatchObject({ code: 'FORBIDDEN' });
    await expect(get(asBob, c, '/etc/hostname')).rejects.toMatchObject({ code: 'FORBIDDEN' });
    // The reader may read a container no caller owns, but not write into it.
    const unowned = await docker.container();
    expect((await get(asReader, unowned, '/etc/hostname')).terminal).toMatchObject({ terminal: true });
    await expect(put(asReader, unowned, '/tmp', Buffer.alloc(1024))).rejects.toMatchObject({ code: 'FORBIDDEN', message: 'missing scope: container:archive-put' });
  }, 60_000);

  it('every copy is an audit line: direction, container, path, tar bytes, sha256, outcome', async () => {
    const got = await get(asAlice, c, '/etc/hostname');
    await expect(get(asAlice, c, '/no/such')).rejects.toMatchObject({ code: 'PATH_NOT_FOUND' });
    await put(asAlice, c, '/in', got.tar);
    // A line is written once the server has ended the call, which may be a moment after the caller heard the end:
    // wait for each line asserted below (an earlier test's copy of the same file can stand in for none of them).
    const digest = sha256(got.tar);
    const auditLines = (): Record<string, unknown>[] =>
      readFileSync(auditPath, 'utf8')
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as Record<string, unknown>);
    const getLine = { operation: 'docker/container/archive/get', direction: 'out', container: c, path: '/etc/hostname', tar_bytes: got.tar.byteLength, sha256: digest, outcome: 'completed' };
    const putLine = { operation: 'docker/container/archive/put', direction: 'in', container: c, path: '/in', tar_bytes: got.tar.byteLength, sha256: digest, outcome: 'completed' };
    const matches = (line: Record<string, unknown>, fields: Record<string, unknown>): boolean => Object.entries(fields).every(([key, value]) => line[key] === value);
    await until(() => {
      const now = auditLines();
      return now.some((line) => matches(line, getLine)) && now.some((line) => matches(line, putLine)) && now.some((line) => line['path'] === '/no/such');
    }, 'the audit lines of the get, the put and the missing path', 15_000);
    const lines = auditLines();
    expect(lines).toContainEqual(expect.objectContaining(getLine));
    expect(lines).toContainEqual(expect.objectContaining(putLine));
    const missing = lines.find((line) => line['path'] === '/no/such');
    expect(missing).toMatchObject({ direction: 'out', outcome: 'error', error_code: 'PATH_NOT_FOUND' });
    expect(missing).not.toHaveProperty('sha256');
  }, 60_000);
});
