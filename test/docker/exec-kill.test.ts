import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect } from '../../src/client/index.js';
import { Registry } from '../../src/dispatcher/index.js';
import { dockerOperations } from '../../src/operations/index.js';
import type { DockerEngine } from '../../src/server/index.js';
import { MemoryConnection } from '../../src/testing/index.js';
import { DockerFixture, dockerHost } from '../support/docker.js';
import { until } from '../support/wait.js';

const silent = (p: string): boolean => p === 'sleep 1001';

/**
 * An engine whose exec.start waits for `release()`: the abort can then arrive,
 * deterministically, while the engine is starting the exec (spec §12, EXEC-5).
 */
function gatedEngine(real: DockerEngine): { engine: DockerEngine; started: Promise<void>; release: () => void; running: Promise<void> } {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  let reached!: () => void;
  const started = new Promise<void>((resolve) => (reached = resolve));
  let ran!: () => void;
  const running = new Promise<void>((resolve) => (ran = resolve));
  const container = (reference: string): Docker.Container => {
    const found = real.container(reference);
    const createExec = found.exec.bind(found);
    found.exec = (async (options: Docker.ExecCreateOptions) => {
      const exec = await createExec(options);
      const start = exec.start.bind(exec);
      exec.start = (async (opts: Docker.ExecStartOptions) => {
        reached();
        await gate;
        const stream = await start(opts);
        ran();
        return stream;
      }) as typeof exec.start;
      return exec;
    }) as typeof found.exec;
    return found;
  };
  return { engine: { ...real, container }, started, release, running };
}

describe('exec kill (spec §12, EXEC-5)', () => {
  const docker = new DockerFixture();
  let containerId = '';
  beforeAll(async () => {
    containerId = await docker.container();
  });
  afterAll(async () => {
    await docker.cleanup();
  });

  it('an abort that arrives while the engine starts the exec still kills a command that prints nothing', async () => {
    const gated = gatedEngine(docker.engine);
    const conn = new MemoryConnection({ registry: new Registry().register(...dockerOperations(gated.engine)), identity: { subject: 'local', scopes: ['*'] } });
    conn.client.request('race', 'docker/container/exec', { containerId, cmd: ['sleep', '1001'] });
    await gated.started;
    conn.client.abort('race');
    await until(() => conn.session.stats.liveCalls === 0, 'abort processed');
    gated.release();
    // The exec starts after its call has ended; it must not be left running.
    await gated.running;
    await new Promise((resolve) => setTimeout(resolve, 500));
    await expect.poll(async () => (await docker.processes(containerId)).filter(silent), { timeout: 3000, interval: 50 }).toEqual([]);
    // And it did start: the kill found it (not a command that never ran).
    expect(gated.engine.counters.execKillFailures).toBe(0);
  });

  describe.runIf(process.getuid?.() === 0)('a server that is not root but may use the engine socket', () => {
    let server: ChildProcess;
    let url = '';
    let copy = '';
    beforeAll(async () => {
      const socketGid = statSync(new URL(dockerHost).pathname).gid;
      // The checkout may sit in a directory only root can enter (a mktemp clone): run
      // the server from a copy `nobody` can read, hard-linked where the disk allows.
      copy = mkdtempSync(join(tmpdir(), 'callwire-unprivileged-'));
      chmodSync(copy, 0o755);
      const root = fileURLToPath(new URL('../..', import.meta.url));
      const parts = ['node_modules', 'dist', 'package.json'].map((p) => join(root, p));
      try {
        execFileSync('cp', ['-al', ...parts, copy]);
      } catch {
        execFileSync('cp', ['-a', ...parts, copy]);
      }
      server = spawn(process.execPath, [join(copy, 'dist/cli/main.js'), 'serve', '--port', '0', '--no-webtransport'], {
        cwd: copy,
        uid: 65534, // nobody
        gid: socketGid, // the socket's group, as `usermod -aG docker` would give
        env: { ...process.env, DOCKER_HOST: dockerHost, HOME: '/tmp' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let banner = '';
      server.stdout!.on('data', (c: Buffer) => (banner += c.toString()));
      server.stderr!.on('data', (c: Buffer) => (banner += c.toString()));
      // The banner comes line by line: wait for the docker line itself, not just the URL before it.
      await until(() => /docker\s+(on|off):/.test(banner), 'the server banner', 15_000);
      expect(banner).toMatch(/docker\s+on:/);
      url = /ws:\/\/\S+/.exec(banner)![0];
    });
    afterAll(() => {
      server?.kill('SIGKILL');
      if (copy) rmSync(copy, { recursive: true, force: true });
    });

    it('abort kills the exec inside the container through the engine (EPERM on the host pid)', async () => {
      const client = await connect(url);
      try {
        const subscription = client.subscribe('docker/container/exec', { containerId, cmd: ['sleep', '1001'] }).subscribe({ error: () => undefined });
        await expect.poll(async () => (await docker.processes(containerId)).filter(silent), { timeout: 5000 }).toHaveLength(1);
        subscription.unsubscribe();
        await expect.poll(async () => (await docker.processes(containerId)).filter(silent), { timeout: 3000, interval: 50 }).toEqual([]);
        expect(await client.call('services/stats', null)).toMatchObject({ execKillFailures: 0 });
      } finally {
        await client.close();
      }
    });
  });
});
