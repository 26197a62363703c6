import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliPath, runCli } from '../support/cli.js';
import { DockerFixture, dockerHost } from '../support/docker.js';
import { skipTitle } from '../support/skip.js';
import { sleep, until } from '../support/wait.js';

const PRLIMIT = '/usr/bin/prlimit';
/** Low enough to fill with a hundred connections, high enough for the server to start. */
const NOFILE = 128;
/** Node's HTTP agent closes an idle kept-alive engine socket after 5 s; past it, the server holds none. */
const AGENT_IDLE_MS = 6000;

/**
 * docs/security.md "Connections and callers", spec §6: a server out of descriptors cannot reach the engine,
 * and that is the server's failure (UNAVAILABLE, infrastructure, exec exit 123), not
 * the engine's refusal (DOCKER_ERROR, 125). The real CLI serves under a real
 * descriptor limit, filled by connections that send nothing.
 */
describe.skipIf(!existsSync(PRLIMIT))(skipTitle('a server out of descriptors', existsSync(PRLIMIT) ? undefined : `no ${PRLIMIT} (util-linux)`), () => {
  const docker = new DockerFixture();
  let server: ChildProcess;
  let port = 0;
  let containerId = '';
  const held: Socket[] = [];

  beforeAll(async () => {
    containerId = await docker.container();
    // No first-request bound: the silent connections must stay for the whole test.
    server = spawn(PRLIMIT, [`--nofile=${NOFILE}:${NOFILE}`, process.execPath, cliPath, 'serve', '--port', '0', '--no-webtransport', '--handshake-timeout', '0'], {
      env: { ...process.env, DOCKER_HOST: dockerHost },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let banner = '';
    server.stdout!.on('data', (chunk: Buffer) => (banner += chunk.toString()));
    server.stderr!.resume();
    await until(() => /ws:\/\/127\.0\.0\.1:\d+/.test(banner), 'the server banner', 15_000);
    port = Number(/ws:\/\/127\.0\.0\.1:(\d+)/.exec(banner)![1]);
    expect(banner).toMatch(/docker\s+on/);
  }, 30_000);
  afterAll(async () => {
    for (const socket of held) socket.destroy();
    server?.kill('SIGKILL');
    await docker.cleanup();
    expect(await docker.ours()).toEqual([]);
  });

  /** prlimit execs node: the server is its process. */
  const descriptors = (): number => readdirSync(`/proc/${server.pid}/fd`).length;

  /** Opens silent connections until the server drops one: then it has no descriptor left. */
  const fill = async (): Promise<void> => {
    for (let dropped = false; !dropped; ) {
      const batch = await Promise.all(
        Array.from({ length: 8 }, () => {
          const socket = connect(port, '127.0.0.1');
          socket.on('error', () => undefined);
          held.push(socket);
          return new Promise<Socket>((resolve) => socket.once('connect', () => resolve(socket)));
        }),
      );
      await sleep(100);
      dropped = batch.some((s) => s.destroyed || s.readyState !== 'open');
    }
  };

  it('an exec answers UNAVAILABLE, an infrastructure failure: exit 123, not the engine refusal DOCKER_ERROR and 125', async () => {
    await fill();
    // Until the engine socket the server kept from its start has closed, one call could still reach the engine.
    for (let full = descriptors(); ; full = descriptors()) {
      await sleep(AGENT_IDLE_MS);
      if (descriptors() >= full) break;
      await fill();
    }
    const full = descriptors();
    // One place: the CLI's own connection takes it, and the engine gets none.
    held.find((s) => !s.destroyed && s.readyState === 'open')!.destroy();
    await until(() => descriptors() < full, 'the server to close the freed connection');

    const run = runCli(['--url', `ws://127.0.0.1:${port}/callwire`, '--json', 'exec', containerId, '--', 'true']);
    const { code } = await run.exited;
    const terminal = JSON.parse(run.stdout) as { outcome: string; call_id: string | null; error?: { code: string; message: string; retryable: boolean } };
    expect({ code, outcome: terminal.outcome, error: terminal.error?.code }).toEqual({ code: 123, outcome: 'infrastructure_failure', error: 'UNAVAILABLE' });
    // The call ran on the server (it has an id) and failed on the way to the engine: not a connection the CLI lost.
    expect(terminal.call_id).not.toBeNull();
    expect(terminal.error!.message).toMatch(/EMFILE/);
    expect(terminal.error!.retryable).toBe(true);
  }, 90_000);
});
