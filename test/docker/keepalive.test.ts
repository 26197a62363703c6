import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { dirname } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type RunningServer } from '../../src/server/index.js';
import { runCli } from '../support/cli.js';
import { DockerFixture } from '../support/docker.js';
import { commandLine } from '../support/proc.js';
import { http3Missing } from '../support/server-fixture.js';
import { skipTitle } from '../support/skip.js';
import { until } from '../support/wait.js';

/** A process's children (the CLI's HTTP/3 edge, when it has one). */
function children(pid: number): number[] {
  try {
    return execFileSync('pgrep', ['-P', String(pid)], { encoding: 'utf8' }).split('\n').filter(Boolean).map(Number);
  } catch {
    return []; // pgrep exits 1 when there are none
  }
}

const KEEPALIVE_MS = 300;

/**
 * A peer that vanishes without a close (spec §5.5): the CLI (and its HTTP/3 edge, if
 * any) is frozen with SIGSTOP, as a laptop lid closing freezes it. The kernel still acknowledges TCP, so only
 * the protocol's keepalive can tell: the server must drop the connection and kill
 * the exec it was running (one that did not ask to be resumed).
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

  // `missing`: why this machine cannot run the case, which is then a recorded skip.
  const cases: { name: string; args: () => string[]; missing?: string | undefined }[] = [
    { name: 'WebSocket (ping/pong)', args: () => ['--url', server.wsUrl] },
    { name: 'WebTransport over HTTP/2 (HTTP/2 PING)', args: () => ['--url', server.wtUrl!, '--cert-hash', server.certHash!, '--transport', 'h2'] },
    // Over HTTP/3 the client's QUIC endpoint is its Deno edge, a child process that answers
    // QUIC's pings by itself: a lid closing freezes both, and so does this test.
    { name: 'WebTransport over HTTP/3 (QUIC PING and idle timeout)', args: () => ['--url', server.wtUrl!, '--cert-hash', server.certHash!, '--transport', 'h3'], missing: http3Missing },
  ];
  for (const [i, c] of cases.entries()) {
    it.skipIf(c.missing !== undefined)(skipTitle(c.name, c.missing), async () => {
      const marker = `sleep ${2000 + i}`;
      // Not resumable: a vanished peer's call ends with its connection (KA-1). A resumable one waits its grace (below).
      const cli = runCli([...c.args(), 'exec', '--no-resume', containerId, '--', 'sleep', String(2000 + i)], { stdin: 'ignore' });
      try {
        await expect.poll(async () => (await docker.processes(containerId)).filter((p) => p === marker), { timeout: 10_000 }).toHaveLength(1);
        // Alive and answering: a few intervals pass and nothing is dropped.
        await new Promise((resolve) => setTimeout(resolve, KEEPALIVE_MS * 4));
        expect((await docker.processes(containerId)).filter((p) => p === marker)).toHaveLength(1);
        const family = [cli.child.pid!, ...children(cli.child.pid!)];
        for (const pid of family) process.kill(pid, 'SIGSTOP');
        const frozenAt = Date.now();
        await until(() => [...server.connections()].length === 0, 'the silent connection dropped', KEEPALIVE_MS * 10);
        await expect.poll(async () => (await docker.processes(containerId)).filter((p) => p === marker), { timeout: 3000, interval: 50 }).toEqual([]);
        // Dropped after at most two intervals of silence, plus scheduling slack.
        expect(Date.now() - frozenAt).toBeLessThan(KEEPALIVE_MS * 2 + 1500);
      } finally {
        // Killed, neither the CLI nor its edge removes the edge's directory (its config's, the edge's last argument): this does.
        const edgeDirs = children(cli.child.pid!).map(commandLine).filter((argv) => argv.some((arg) => arg.endsWith('edge/h3-client-edge.ts'))).map((argv) => dirname(argv.at(-1)!));
        for (const pid of children(cli.child.pid!)) process.kill(pid, 'SIGKILL');
        cli.child.kill('SIGKILL');
        await cli.exited;
        for (const dir of edgeDirs) rmSync(dir, { recursive: true, force: true });
      }
    });
  }

  it('a resumable exec outlives the drop for its grace (RSM-6), then is killed', async () => {
    const marker = 'sleep 2999';
    const cli = runCli(['--url', server.wsUrl, 'exec', '--resume', '2', containerId, '--', 'sleep', '2999'], { stdin: 'ignore' });
    try {
      await expect.poll(async () => (await docker.processes(containerId)).filter((p) => p === marker), { timeout: 10_000 }).toHaveLength(1);
      process.kill(cli.child.pid!, 'SIGSTOP');
      await until(() => [...server.connections()].length === 0, 'the silent connection dropped', KEEPALIVE_MS * 10);
      // Dropped, not ended: the call waits for its caller, and its command runs on.
      expect(server.resumable.detached).toBe(1);
      expect((await docker.processes(containerId)).filter((p) => p === marker)).toHaveLength(1);
      await expect.poll(async () => (await docker.processes(containerId)).filter((p) => p === marker), { timeout: 6000, interval: 100 }).toEqual([]);
      expect(server.resumable.size).toBe(0);
    } finally {
      cli.child.kill('SIGKILL');
      await cli.exited;
    }
  });
});
