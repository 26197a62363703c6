import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect } from '../../src/client-node/index.js';
import { Registry } from '../../src/dispatcher/index.js';
import { dockerOperations } from '../../src/operations/index.js';
import type { DockerEngine } from '../../src/server/index.js';
import { innermostPid } from '../../src/operations/docker/kill-tree.js';
import { sweepInside } from '../../src/operations/docker/sweep-inside.js';
import { MemoryConnection } from '../../src/testing/index.js';
import { cliBin } from '../support/cli.js';
import { DockerFixture, dockerCli, dockerHost } from '../support/docker.js';
import { skipTitle } from '../support/skip.js';
import { until } from '../support/wait.js';

const silent = (p: string): boolean => p === 'sleep 1001';

/** A caller of the Docker operations on `engine`, in this process. */
const callerOn = (engine: DockerEngine): MemoryConnection =>
  new MemoryConnection({ registry: new Registry().register(...dockerOperations(engine)), identity: { subject: 'local', scopes: ['*'] } });

/**
 * Commands that leave processes behind in every way a process can leave its exec's
 * tree, each with the `sleep` lines that must run before the abort and be gone after.
 */
const escapes = [
  { name: "a double fork, re-parented to the container's PID 1", script: '(sleep 4501 &); sleep 4601', runs: ['sleep 4501', 'sleep 4601'] },
  { name: 'setsid', script: 'setsid sleep 4502 & sleep 4602', runs: ['sleep 4502', 'sleep 4602'] },
  // The image has no nohup binary: this is what nohup does (SIGHUP ignored, output away, then exec).
  { name: 'nohup', script: "(trap '' HUP; exec sleep 4503) >/dev/null 2>&1 & sleep 4603", runs: ['sleep 4503', 'sleep 4603'] },
  {
    name: 'a deep background chain ending in a double fork',
    script: `sh -c 'sh -c "(sleep 4504 &); sleep 4514" & sleep 4524' & sleep 4604`,
    runs: ['sleep 4504', 'sleep 4514', 'sleep 4524', 'sleep 4604'],
  },
];

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

  const routes = [
    { name: 'from the host (root, a local engine)', engine: () => docker.engine },
    // The same engine, taken for a remote one: the kill must go through the engine, inside the container.
    { name: 'inside the container, through the engine (a remote engine)', engine: () => ({ ...docker.engine, local: false }) },
  ];

  it.each(routes)('an abort that arrives while the engine starts the exec still kills a command that prints nothing: $name', async (route) => {
    const gated = gatedEngine(route.engine());
    const conn = new MemoryConnection({ registry: new Registry().register(...dockerOperations(gated.engine)), identity: { subject: 'local', scopes: ['*'] } });
    conn.client.request('race', 'docker/container/exec', { containerId, cmd: ['sleep', '1001'] });
    await gated.started;
    conn.client.abort('race');
    await until(() => conn.server.stats.liveCalls === 0, 'abort processed');
    gated.release();
    // The exec starts after its call has ended; it must not be left running.
    await gated.running;
    await new Promise((resolve) => setTimeout(resolve, 500));
    await expect.poll(async () => (await docker.processes(containerId)).filter(silent), { timeout: 3000, interval: 50 }).toEqual([]);
    // And it did start: the kill found it (not a command that never ran).
    expect(gated.engine.counters.execKillFailures).toBe(0);
  });

  /** Which of `lines` run in the container, sorted (a zombie shows as `[sleep]`, so it is not one of them). */
  const running = async (lines: readonly string[]): Promise<string[]> =>
    (await docker.processes(containerId)).filter((p) => lines.includes(p)).sort();

  /** SIGKILLs what a test left running on purpose, by its host pid (docker top's). */
  const removeLeftovers = async (lines: readonly string[]): Promise<void> => {
    const top = await docker.engine.docker.getContainer(containerId).top({ ps_args: '-eo pid,args' });
    for (const [pid, args] of (top.Processes ?? []) as string[][]) if (lines.includes(args ?? '')) process.kill(Number(pid), 'SIGKILL');
  };

  for (const route of routes) {
    describe(`an aborted exec leaves none of its processes: ${route.name}`, () => {
      it.each(escapes)('$name', async ({ script, runs }) => {
        const engine = route.engine();
        const failures = engine.counters.execKillFailures;
        const conn = callerOn(engine);
        try {
          conn.client.request('escape', 'docker/container/exec', { containerId, cmd: ['sh', '-c', script] });
          await expect.poll(() => running(runs), { timeout: 10_000, interval: 50 }).toHaveLength(runs.length);
          conn.client.abort('escape');
          await expect.poll(() => running(runs), { timeout: 5000, interval: 50 }).toEqual([]);
          expect(engine.counters.execKillFailures).toBe(failures);
        } finally {
          await removeLeftovers(runs);
        }
      });
    });
  }

  it("a child started without the mark (env -i) escapes once its parent has ended, as services/schema states; the exec's marked processes do not", async () => {
    const conn = callerOn(docker.engine);
    const runs = ['sleep 4531', 'sleep 4532', 'sleep 4631'];
    try {
      conn.client.request('unmarked', 'docker/container/exec', { containerId, cmd: ['sh', '-c', '(env -i sleep 4531 &); (sleep 4532 &); sleep 4631'] });
      await expect.poll(() => running(runs), { timeout: 10_000, interval: 50 }).toHaveLength(runs.length);
      conn.client.abort('unmarked');
      // The kill sweeps until no marked process is left: once its marked sibling is gone, the sweep has seen the unmarked one.
      await expect.poll(() => running(['sleep 4532', 'sleep 4631']), { timeout: 5000, interval: 50 }).toEqual([]);
      expect(await running(runs)).toEqual(['sleep 4531']);
    } finally {
      await removeLeftovers(runs);
    }
  });

  it("an env -i child whose parent still runs goes with the exec's tree", async () => {
    const conn = callerOn(docker.engine);
    const runs = ['sleep 4541', 'sleep 4641'];
    try {
      conn.client.request('tree', 'docker/container/exec', { containerId, cmd: ['sh', '-c', 'env -i setsid sleep 4541 & sleep 4641'] });
      await expect.poll(() => running(runs), { timeout: 10_000, interval: 50 }).toHaveLength(runs.length);
      conn.client.abort('tree');
      await expect.poll(() => running(runs), { timeout: 5000, interval: 50 }).toEqual([]);
    } finally {
      await removeLeftovers(runs);
    }
  });

  it("an env -i grandchild whose parent still runs goes with the exec's tree: the tree is walked to its leaves (issue 31)", async () => {
    const conn = callerOn(docker.engine);
    const runs = ['sleep 4551', 'sleep 4552', 'sleep 4651'];
    try {
      // The unmarked sleep is a child of a child of the exec's process: only the walk of the whole tree finds it.
      conn.client.request('deep', 'docker/container/exec', { containerId, cmd: ['sh', '-c', `sh -c 'env -i sleep 4551 & sleep 4552' & sleep 4651`] });
      await expect.poll(() => running(runs), { timeout: 10_000, interval: 50 }).toHaveLength(runs.length);
      conn.client.abort('deep');
      await expect.poll(() => running(runs), { timeout: 5000, interval: 50 }).toEqual([]);
    } finally {
      await removeLeftovers(runs);
    }
  });

  it('the sweep inside the container SIGKILLs the pids it is given, unmarked ones included (the route for what the host may not signal, issue 31)', async () => {
    const runs = ['sleep 4561'];
    try {
      await dockerCli(['exec', '-d', containerId, 'sleep', '4561']);
      await expect.poll(() => running(runs), { timeout: 10_000, interval: 50 }).toEqual(runs);
      const top = await docker.engine.docker.getContainer(containerId).top({ ps_args: '-eo pid,args' });
      const hostPid = Number(((top.Processes ?? []) as string[][]).find(([, args]) => args === 'sleep 4561')![0]);
      const insidePid = innermostPid(hostPid);
      expect(insidePid).toBeGreaterThan(0);
      // A mark nothing carries: only the pid given can be what the sweep kills.
      expect(await sweepInside(docker.engine.docker.getContainer(containerId), 'CALLWIRE_EXEC=nothing-carries-this', [insidePid!])).toBeUndefined();
      await expect.poll(() => running(runs), { timeout: 5000, interval: 50 }).toEqual([]);
    } finally {
      await removeLeftovers(runs);
    }
  });

  it("one exec's abort does not touch another exec running in the same container", async () => {
    const conn = callerOn(docker.engine);
    const first = ['sleep 4701', 'sleep 4702'];
    const second = ['sleep 4711', 'sleep 4712'];
    try {
      conn.client.request('first', 'docker/container/exec', { containerId, cmd: ['sh', '-c', '(sleep 4701 &); sleep 4702'] });
      conn.client.request('second', 'docker/container/exec', { containerId, cmd: ['sh', '-c', '(sleep 4711 &); sleep 4712'] });
      await expect.poll(() => running([...first, ...second]), { timeout: 10_000, interval: 50 }).toHaveLength(4);
      conn.client.abort('first');
      await expect.poll(() => running(first), { timeout: 5000, interval: 50 }).toEqual([]);
      expect(await running(second)).toEqual(second);
      conn.client.abort('second');
      await expect.poll(() => running(second), { timeout: 5000, interval: 50 }).toEqual([]);
    } finally {
      await removeLeftovers([...first, ...second]);
    }
  });

  it("a completed exec's background child runs on, as under docker exec", async () => {
    const runs = ['sleep 4801', 'sleep 4802'];
    try {
      const conn = callerOn(docker.engine);
      conn.client.request('done', 'docker/container/exec', { containerId, cmd: ['sh', '-c', '(sleep 4801 >/dev/null 2>&1 &); echo done'] });
      const end = await conn.client.next((e) => e.id === 'done' && (e.type === 'call.completed' || e.type === 'call.error'), 10_000);
      expect(end.type).toBe('call.completed');
      expect((await dockerCli(['exec', containerId, 'sh', '-c', '(sleep 4802 >/dev/null 2>&1 &); echo done'])).code).toBe(0);
      // A kill would have come right after the call ended; both must outlive that moment.
      await new Promise((resolve) => setTimeout(resolve, 1000));
      expect(await running(runs)).toEqual(runs);
    } finally {
      await removeLeftovers(runs);
    }
  });

  it("the caller's env reaches the command beside the server's random CALLWIRE_EXEC, which the caller may not set", async () => {
    const conn = callerOn(docker.engine);
    const outputOf = async (id: string): Promise<string> => {
      conn.client.request(id, 'docker/container/exec', { containerId, cmd: ['sh', '-c', 'echo "$FOO $CALLWIRE_EXEC"'], env: ['FOO=bar'] });
      await conn.client.next((e) => e.id === id && e.type === 'call.completed', 10_000);
      return conn.client
        .framesFor(id)
        .flatMap((e) => (e.type === 'call.responded' ? [(e.payload.output as { text?: string }).text ?? ''] : []))
        .join('');
    };
    const [one, two] = [await outputOf('one'), await outputOf('two')];
    expect(one).toMatch(/^bar [0-9a-f]{32}\n$/);
    expect(two).toMatch(/^bar [0-9a-f]{32}\n$/);
    expect(one).not.toBe(two);
    conn.client.request('own', 'docker/container/exec', { containerId, cmd: ['true'], env: ['CALLWIRE_EXEC=0123'] });
    const refused = await conn.client.next((e) => e.id === 'own' && e.type === 'call.error');
    expect(refused.type === 'call.error' && refused.payload).toMatchObject({ code: 'INVALID_INPUT', message: expect.stringMatching(/CALLWIRE_EXEC is set by the server/) });
  });

  const notRoot = process.getuid?.() === 0 ? undefined : 'not root here: the test runs the server as another user';
  describe.skipIf(notRoot !== undefined)(skipTitle('a server that is not root but may use the engine socket', notRoot), () => {
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
      server = spawn(process.execPath, [join(copy, cliBin), 'serve', '--port', '0', '--no-webtransport'], {
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

    it('abort kills the exec, a double-forked child included, inside the container through the engine (EPERM on the host pids)', async () => {
      const client = await connect(url);
      const runs = ['sleep 1001', 'sleep 1002'];
      try {
        const subscription = client.subscribe('docker/container/exec', { containerId, cmd: ['sh', '-c', '(sleep 1002 &); exec sleep 1001'] }).subscribe({ error: () => undefined });
        await expect.poll(() => running(runs), { timeout: 5000 }).toHaveLength(runs.length);
        subscription.unsubscribe();
        await expect.poll(() => running(runs), { timeout: 5000, interval: 50 }).toEqual([]);
        expect(await client.call('services/stats', null)).toMatchObject({ execKillFailures: 0 });
      } finally {
        await client.close();
      }
    });
  });
});
