import { lastValueFrom } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Bystander } from '../support/bystander.js';
import { DockerFixture, dockerHost, RUN_LABEL, TEST_IMAGE } from '../support/docker.js';
import { ServedCli } from '../support/served.js';

/**
 * Every container or image a caller names goes into an engine API path. One the
 * engine cleans (`..`) was answered 301 and followed to the host and port it named;
 * an unreachable one killed the server. Each must be INVALID_INPUT before the engine
 * is asked (spec §12, DOCKER-1), over HTTP and the WebSocket, with nothing reaching
 * the listener it names and the server answering afterwards.
 */
describe('engine references a caller names (DOCKER-1)', () => {
  const docker = new DockerFixture();
  const bystander = new Bystander();
  const served = new ServedCli();
  let c = '';
  beforeAll(async () => {
    await bystander.start();
    await served.start(dockerHost);
    c = await docker.container();
  });
  afterAll(async () => {
    await served.stop();
    await bystander.stop();
    await docker.cleanup();
  });

  /** Containers spelled to leave the engine's path; the unreachable ones killed the server. */
  const badContainers = (): string[] => [
    `x/../../127.0.0.1:${bystander.port}/via-path`,
    `${c}/../../../127.0.0.1:${bystander.port}/via-id`,
    'x/../../127.0.0.1:1/unreachable',
    '../../etc',
    `/${c.slice(0, 12)}`,
    `${c.slice(0, 12)}?all=1`,
    `x%2F..%2F..%2F127.0.0.1:${bystander.port}`,
    '',
  ];
  const badImages = (): string[] => [
    `x/../../../127.0.0.1:${bystander.port}/via-image`,
    'x/../../../127.0.0.1:1/unreachable',
    '../../etc',
    'Busybox',
    `${TEST_IMAGE}/../../x`,
    'a b',
    '',
  ];

  type Case = { operation: string; kind: 'unary' | 'stream'; input: (reference: string) => unknown; references: () => string[] };
  const cases: Case[] = [
    { operation: 'docker/container/exec', kind: 'stream', input: (containerId) => ({ containerId, cmd: ['true'] }), references: badContainers },
    { operation: 'docker/container/logs', kind: 'stream', input: (containerId) => ({ containerId, follow: true }), references: badContainers },
    { operation: 'docker/container/inspect', kind: 'unary', input: (containerId) => ({ containerId }), references: badContainers },
    { operation: 'docker/container/start', kind: 'unary', input: (containerId) => ({ containerId }), references: badContainers },
    { operation: 'docker/container/stop', kind: 'unary', input: (containerId) => ({ containerId, timeoutSeconds: 0 }), references: badContainers },
    { operation: 'docker/container/restart', kind: 'unary', input: (containerId) => ({ containerId, timeoutSeconds: 0 }), references: badContainers },
    { operation: 'docker/container/remove', kind: 'unary', input: (containerId) => ({ containerId, force: true }), references: badContainers },
    // Labelled, so that a container the engine creates after all (a broken check) is still cleaned up.
    { operation: 'docker/container/create', kind: 'unary', input: (image) => ({ image, labels: { [RUN_LABEL]: docker.runId } }), references: badImages },
    { operation: 'docker/container/create', kind: 'unary', input: (name) => ({ image: TEST_IMAGE, name, labels: { [RUN_LABEL]: docker.runId } }), references: badContainers },
    { operation: 'docker/image/inspect', kind: 'unary', input: (image) => ({ image }), references: badImages },
    { operation: 'docker/image/pull', kind: 'stream', input: (image) => ({ image }), references: badImages },
  ];

  for (const { operation, kind, input, references } of cases) {
    const field = Object.keys(input('r') as object).find((k) => (input('r') as Record<string, unknown>)[k] === 'r')!;
    it(`${operation} (${field}): each bad reference is INVALID_INPUT over HTTP and the WebSocket; nothing reaches the named listener; the server lives`, async () => {
      for (const reference of references()) {
        const viaHttp = await served.httpCall(operation, input(reference));
        expect(viaHttp, `HTTP ${JSON.stringify(reference)}`).toMatchObject({ outcome: 'invalid_input', error: { code: 'INVALID_INPUT', message: expect.stringContaining(field) } });
        const call = kind === 'unary' ? served.client.call(operation, input(reference)) : lastValueFrom(served.client.subscribe(operation, input(reference)));
        await expect(call, `WebSocket ${JSON.stringify(reference)}`).rejects.toMatchObject({ code: 'INVALID_INPUT' });
      }
      await served.expectAlive();
      expect(bystander.received).toEqual([]);
    });
  }

  it("services/schema gives every reference field its grammar as a pattern, so a caller can check one before it asks", async () => {
    const fields: [string, string][] = [
      ['docker/container/exec', 'containerId'],
      ['docker/container/logs', 'containerId'],
      ['docker/container/inspect', 'containerId'],
      ['docker/container/start', 'containerId'],
      ['docker/container/stop', 'containerId'],
      ['docker/container/restart', 'containerId'],
      ['docker/container/remove', 'containerId'],
      ['docker/container/create', 'image'],
      ['docker/container/create', 'name'],
      ['docker/image/inspect', 'image'],
      ['docker/image/pull', 'image'],
    ];
    for (const [name, field] of fields) {
      const spec = await served.client.schema(name);
      const property = (spec.input_schema as { properties: Record<string, { pattern?: string }> }).properties[field];
      expect(property?.pattern, `${name} ${field}`).toMatch(/^\^.*\$$/);
      expect(new RegExp(property!.pattern!).test('x/../../127.0.0.1:1/y'), `${name} ${field}`).toBe(false);
    }
  });

  it('good references still reach the engine: a container by name, id prefix and id; an image by tag, full name and id', async () => {
    const info = await served.client.call<{ Id: string; Name: string }>('docker/container/inspect', { containerId: c });
    for (const containerId of [info.Name.slice(1), c.slice(0, 12)]) {
      expect(await served.client.call('docker/container/inspect', { containerId })).toMatchObject({ Id: c });
      expect(await served.httpCall('docker/container/inspect', { containerId })).toMatchObject({ outcome: 'success', output: { Id: c } });
    }
    const image = await served.client.call<{ Id: string }>('docker/image/inspect', { image: TEST_IMAGE });
    for (const reference of [`docker.io/library/${TEST_IMAGE}`, image.Id, image.Id.slice('sha256:'.length, 'sha256:'.length + 12)]) {
      expect(await served.client.call('docker/image/inspect', { image: reference })).toMatchObject({ Id: image.Id });
    }
    // Of the grammar, but no such image: the engine is asked, and says so.
    await expect(served.client.call('docker/image/inspect', { image: `127.0.0.1:${bystander.port}/team/app:1.0@sha256:${'0'.repeat(64)}` })).rejects.toMatchObject({ code: 'IMAGE_NOT_FOUND' });
    expect(bystander.received).toEqual([]);
  });
});
