import { lastValueFrom, toArray } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type Client } from '../../src/client-node/index.js';
import { DockerFixture, RUN_LABEL, TEST_IMAGE } from '../support/docker.js';
import { ServerFixture } from '../support/server-fixture.js';

const alice = { token: 'alice-token-0123456789', subject: 'alice', scopes: ['container:*', 'image:*'] };
const bob = { token: 'bob-token-0123456789ab', subject: 'bob', scopes: ['container:*'] };
const reader = { token: 'reader-token-0123456789', subject: 'reader', scopes: ['container:list'] };

describe('the Docker reference surface', () => {
  const docker = new DockerFixture();
  const fx = new ServerFixture();
  let asAlice: Client;
  let asBob: Client;
  let asReader: Client;
  beforeAll(async () => {
    await fx.start({ docker: docker.engine, webTransportPort: false, tokens: [alice, bob, reader] });
    asAlice = await connect(fx.server.wsUrl, { token: alice.token });
    asBob = await connect(fx.server.wsUrl, { token: bob.token });
    asReader = await connect(fx.server.wsUrl, { token: reader.token });
  });
  afterAll(async () => {
    await Promise.all([asAlice.close(), asBob.close(), asReader.close()]);
    await fx.stop();
    await docker.cleanup();
    expect(await docker.ours()).toEqual([]);
  });

  it('create → start → exec → logs → stop → restart → remove, with ownership labels the caller cannot spoof', async () => {
    const { containerId } = await asAlice.call<{ containerId: string }>('docker/container/create', {
      image: TEST_IMAGE,
      cmd: ['sh', '-c', 'echo first line; echo to stderr >&2; exec sleep 1000000'],
      labels: { 'callwire.owner': 'mallory', 'callwire.managed': 'false', [RUN_LABEL]: docker.runId, team: 'infra' },
    });
    const inspected = await asAlice.call<{ Config: { Labels: Record<string, string> } }>('docker/container/inspect', { containerId });
    expect(inspected.Config.Labels).toMatchObject({ 'callwire.owner': 'alice', 'callwire.managed': 'true', team: 'infra' });

    expect(await asAlice.call('docker/container/start', { containerId })).toMatchObject({ state: 'running' });
    expect(await asAlice.call('docker/container/start', { containerId })).toMatchObject({ state: 'running' }); // already running: fine

    const logs = await lastValueFrom(asAlice.subscribe<{ stream: string; timestamp: string; text: string }>('docker/container/logs', { containerId }).pipe(toArray()));
    // Two streams: the order between them is the engine's; each line is on its own stream.
    expect(logs.map((l) => [l.stream, l.text]).sort()).toEqual([
      ['stderr', 'to stderr'],
      ['stdout', 'first line'],
    ]);
    expect(logs.every((l) => /^\d{4}-\d\d-\d\dT/.test(l.timestamp))).toBe(true);

    const owned = await asAlice.call<{ containers: { id: string }[] }>('docker/container/list', { owned_only: true });
    expect(owned.containers.map((c) => c.id)).toContain(containerId);
    const bobs = await asBob.call<{ containers: { id: string }[] }>('docker/container/list', { owned_only: true });
    expect(bobs.containers.map((c) => c.id)).not.toContain(containerId);

    // Bob holds container:* but the container is Alice's.
    await expect(asBob.call('docker/container/stop', { containerId })).rejects.toMatchObject({ code: 'FORBIDDEN', message: expect.stringMatching(/belongs to another caller/) });
    await expect(lastValueFrom(asBob.subscribe('docker/container/exec', { containerId, cmd: ['true'] }))).rejects.toMatchObject({ code: 'FORBIDDEN' });
    // The reader lacks the scope altogether.
    await expect(asReader.call('docker/container/stop', { containerId })).rejects.toMatchObject({ code: 'FORBIDDEN', message: 'missing scope: container:stop' });

    expect(await asAlice.call('docker/container/stop', { containerId, timeoutSeconds: 0 })).toMatchObject({ state: 'exited' });
    expect(await asAlice.call('docker/container/restart', { containerId, timeoutSeconds: 0 })).toMatchObject({ state: 'running' });
    expect(await asAlice.call('docker/container/remove', { containerId, force: true })).toMatchObject({ removed: true });
    await expect(asAlice.call('docker/container/inspect', { containerId })).rejects.toMatchObject({ code: 'CONTAINER_NOT_FOUND' });
  }, 60_000);

  it('follow keeps a log stream open until it is aborted', async () => {
    const containerId = await docker.container({}, ['sh', '-c', 'i=0; while true; do echo tick$i; i=$((i+1)); sleep 0.05; done']);
    const lines: string[] = [];
    const sub = asAlice.subscribe<{ text: string }>('docker/container/logs', { containerId, follow: true }).subscribe((l) => lines.push(l.text));
    // New lines keep arriving on the open stream, in order.
    await expect.poll(() => lines.length, { timeout: 5000 }).toBeGreaterThan(5);
    expect(lines.slice(0, 5)).toEqual(['tick0', 'tick1', 'tick2', 'tick3', 'tick4']);
    expect(sub.closed).toBe(false);
    sub.unsubscribe();
    await expect.poll(() => fx.liveCalls()).toBe(0);
  });

  it('a log line longer than a frame may be goes out in pieces that add up to it (LIM-1), the first with its timestamp', async () => {
    // 20 MiB in one line: as one frame it would pass maxFrameBytes (16 MiB) and end the call.
    const containerId = await docker.container({}, ['sh', '-c', 'head -c 20971520 /dev/zero | tr "\\0" a; echo; echo next; sleep 1000000']);
    let frames: { stream: string; timestamp: string; text: string }[] = [];
    await expect
      .poll(async () => {
        frames = await lastValueFrom(asAlice.subscribe<{ stream: string; timestamp: string; text: string }>('docker/container/logs', { containerId }).pipe(toArray()));
        return frames.at(-1)?.text;
      }, { timeout: 20_000, interval: 500 })
      .toBe('next');
    const pieces = frames.slice(0, -1);
    expect(pieces.map((f) => f.text).join('')).toBe('a'.repeat(20 * 1024 * 1024));
    expect(pieces.length).toBeGreaterThan(1);
    expect(pieces[0]!.timestamp).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect(pieces.slice(1).every((f) => f.timestamp === '')).toBe(true);
  }, 60_000);

  it('create with an unknown image is IMAGE_NOT_FOUND', async () => {
    await expect(asAlice.call('docker/container/create', { image: 'callwire-missing:nope' })).rejects.toMatchObject({ code: 'IMAGE_NOT_FOUND', details: { image: 'callwire-missing:nope' } });
  });

  it('image list, inspect, and IMAGE_NOT_FOUND', async () => {
    const { images } = await asAlice.call<{ images: { tags: string[] }[] }>('docker/image/list');
    expect(images.flatMap((i) => i.tags)).toContain(TEST_IMAGE);
    const inspected = await asAlice.call<{ RepoTags: string[] }>('docker/image/inspect', { image: TEST_IMAGE });
    expect(inspected.RepoTags).toContain(TEST_IMAGE);
    await expect(asAlice.call('docker/image/inspect', { image: 'callwire-missing:nope' })).rejects.toMatchObject({ code: 'IMAGE_NOT_FOUND' });
  });

  it('image pull fails with IMAGE_PULL_FAILED when no registry is reachable', async () => {
    const error = await lastValueFrom(asAlice.subscribe('docker/image/pull', { image: 'callwire.invalid/nothing:latest' })).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'IMAGE_PULL_FAILED', details: { image: 'callwire.invalid/nothing:latest' } });
  }, 60_000);

  it('services/schema documents both exec frame shapes and the declared errors', async () => {
    const spec = await asAlice.call<{ output_schema: { anyOf: { properties: Record<string, unknown>; description?: string }[] }; error_schemas: { code: string; http_status: number }[] }>(
      'services/schema',
      { name: 'docker/container/exec' },
    );
    const shapes = spec.output_schema.anyOf.map((s) => Object.keys(s.properties).sort().join(','));
    expect(shapes).toEqual(['stream,text', 'data,stream', 'exitCode,stderrBytes,stdoutBytes,terminal']);
    expect(spec.output_schema.anyOf[2]!.properties['terminal']).toEqual({ type: 'boolean', const: true });
    expect(spec.error_schemas.map((e) => [e.code, e.http_status])).toEqual([
      ['CONTAINER_NOT_FOUND', 404],
      ['DOCKER_ERROR', 500],
    ]);
  });

  it('discovery lists the Docker operations to a caller with the scopes, and hides them from one without', async () => {
    const names = (await asAlice.listOperations()).map((o) => o.name);
    expect(names).toEqual(expect.arrayContaining(['docker/container/exec', 'docker/container/logs', 'docker/image/pull']));
    const readerNames = (await asReader.listOperations()).map((o) => o.name);
    expect(readerNames).toContain('docker/container/list');
    expect(readerNames).not.toContain('docker/container/exec');
  });
});
