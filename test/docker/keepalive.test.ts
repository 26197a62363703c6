import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type RunningServer } from '../../src/server/index.js';
import { runCli } from '../support/cli.js';
import { DockerFixture } from '../support/docker.js';
import { until } from '../support/wait.js';

const KEEPALIVE_MS = 300;

/**
 * A peer that vanishes without a close (spec §5.5): the CLI is frozen with SIGSTOP,
 * as a laptop lid closing freezes it. The kernel still acknowledges TCP, so only
 * the protocol's keepalive can tell: the server must drop the connection and kill
 * the exec it was running.
 */
describe('keepalive drops a silent peer and kills its exec', () => {
  const docker = new DockerFixture();
  let server: RunningServer;
  let containerId = '';
  beforeAll(async () => {
    server = await startServer({ port: 0, webTransportPort: 0, docker: docker.engine, keepaliveMs: KEEPALIVE_MS });
    containerId = await docker.container();
  });
  afterAll(async () => {
    await server.close();
    await docker.cleanup();
  });

  const cases = [
    { name: 'WebSocket (ping/pong)', args: () => ['--url', server.wsUrl] },
    { name: 'WebTransport over HTTP/2 (HTTP/2 PING)', args: () => ['--url', server.wtUrl!, '--cert-hash', server.certHash!] },
  ];
  for (const [i, c] of cases.entries()) {
    it(c.name, async () => {
      const marker = `sleep ${2000 + i}`;
      const cli = runCli([...c.args(), 'exec', containerId, '--', 'sleep', String(2000 + i)], { stdin: 'ignore' });
      try {
        await expect.poll(async () => (await docker.processes(containerId)).filter((p) => p === marker), { timeout: 10_000 }).toHaveLength(1);
        // Alive and answering: a few intervals pass and nothing is dropped.
        await new Promise((resolve) => setTimeout(resolve, KEEPALIVE_MS * 4));
        expect((await docker.processes(containerId)).filter((p) => p === marker)).toHaveLength(1);
        cli.child.kill('SIGSTOP');
        const frozenAt = Date.now();
        await until(() => [...server.sessions()].length === 0, 'the silent connection dropped', KEEPALIVE_MS * 10);
        await expect.poll(async () => (await docker.processes(containerId)).filter((p) => p === marker), { timeout: 3000, interval: 50 }).toEqual([]);
        // Dropped after at most two intervals of silence, plus scheduling slack.
        expect(Date.now() - frozenAt).toBeLessThan(KEEPALIVE_MS * 2 + 1500);
      } finally {
        cli.child.kill('SIGKILL');
        await cli.exited;
      }
    });
  }
});
