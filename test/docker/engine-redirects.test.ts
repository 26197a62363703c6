import { lastValueFrom } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Bystander } from '../support/bystander.js';
import { FakeEngine } from '../support/fake-engine.js';
import { ServedCli } from '../support/served.js';

/**
 * The layer under the grammar (spec §12, DOCKER-1): an engine that redirects every
 * request, to a listener and to a port where nothing listens. The redirect is never
 * followed: each call ends with DOCKER_ERROR, nothing reaches either target, and the
 * server answers afterwards. A reference also travels as one encoded path segment.
 */
describe('an engine that answers every request with a redirect', () => {
  const bystander = new Bystander();
  const targets = (): string[] => [`http://127.0.0.1:${bystander.port}/via-redirect`, `/127.0.0.1:${bystander.port}/relative`, 'http://127.0.0.1:1/unreachable'];
  let next = 0;
  const engine = new FakeEngine((_request, response) => {
    const all = targets();
    response.writeHead(301, { location: all[next++ % all.length]!, 'content-type': 'text/plain' }).end('moved');
  });
  const served = new ServedCli();
  beforeAll(async () => {
    await bystander.start();
    await engine.start();
    await served.start(engine.dockerHost);
  });
  afterAll(async () => {
    await served.stop();
    await engine.stop();
    await bystander.stop();
  });

  const cases: { operation: string; kind: 'unary' | 'stream'; input: unknown }[] = [
    { operation: 'docker/container/inspect', kind: 'unary', input: { containerId: 'abc123' } },
    { operation: 'docker/container/exec', kind: 'stream', input: { containerId: 'abc123', cmd: ['true'] } },
    { operation: 'docker/container/logs', kind: 'stream', input: { containerId: 'abc123', follow: true } },
    { operation: 'docker/container/stop', kind: 'unary', input: { containerId: 'abc123' } },
    { operation: 'docker/container/remove', kind: 'unary', input: { containerId: 'abc123' } },
    { operation: 'docker/container/list', kind: 'unary', input: null },
    { operation: 'docker/container/create', kind: 'unary', input: { image: 'busybox:1.36', name: 'web-1' } },
    { operation: 'docker/image/inspect', kind: 'unary', input: { image: 'busybox' } },
    { operation: 'docker/image/pull', kind: 'stream', input: { image: 'busybox' } },
    { operation: 'docker/image/list', kind: 'unary', input: null },
  ];

  for (const { operation, kind, input } of cases) {
    it(`${operation}: DOCKER_ERROR naming the redirect, over HTTP and the WebSocket, for each target; nothing reaches them; the server lives`, async () => {
      // Three targets in turn, each met over both carriers.
      for (let round = 0; round < 3; round++) {
        expect(await served.httpCall(operation, input)).toMatchObject({
          outcome: 'operation_failure',
          error: { code: 'DOCKER_ERROR', message: expect.stringMatching(/answered 301, a redirect/) },
        });
        const call = kind === 'unary' ? served.client.call(operation, input) : lastValueFrom(served.client.subscribe(operation, input));
        await expect(call).rejects.toMatchObject({ code: 'DOCKER_ERROR', message: expect.stringMatching(/answered 301, a redirect/), details: { statusCode: 301 } });
      }
      await served.expectAlive();
      expect(bystander.received).toEqual([]);
    });
  }

  it('a reference goes to the engine as one encoded path segment', async () => {
    engine.paths.length = 0;
    await served.client.call('docker/image/inspect', { image: 'registry.example:5000/team/app:1.0' }).catch(() => undefined);
    await served.client.call('docker/container/inspect', { containerId: 'web-1.blue_2' }).catch(() => undefined);
    expect(engine.paths).toEqual(['/images/registry.example%3A5000%2Fteam%2Fapp%3A1.0/json', '/containers/web-1.blue_2/json']);
  });
});
