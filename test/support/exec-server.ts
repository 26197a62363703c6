import { afterAll, beforeAll, expect } from 'vitest';
import type { Client } from '../../src/client/index.js';
import { DockerFixture } from './docker.js';
import { hasHttp3, ServerFixture, transportCases } from './server-fixture.js';

/**
 * Inside a describe: a server with the Docker operations, one running container and
 * a WebSocket client, all set up before the tests and removed after them.
 * `webTransport`: serve WebTransport too (HTTP/2, and HTTP/3 where Deno is installed), for tests that run over every carrier.
 */
export function useExecServer(options: { webTransport?: boolean } = {}): { docker: DockerFixture; fx: ServerFixture; containerId: () => string; client: () => Client } {
  const docker = new DockerFixture();
  const fx = new ServerFixture();
  let containerId = '';
  let client: Client | undefined;
  beforeAll(async () => {
    await fx.start({ docker: docker.engine, ...(options.webTransport ? { http3: hasHttp3 } : { webTransportPort: false }) });
    containerId = await docker.container();
    client = await fx.client(transportCases[0]!);
  });
  afterAll(async () => {
    await fx.stop();
    await docker.cleanup();
    // No container of this file outlives it.
    expect(await docker.ours()).toEqual([]);
  });
  return { docker, fx, containerId: () => containerId, client: () => client! };
}
