import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { longLivedNodeFlags } from '../../src/cli/node-flags.js';
import { runCli } from '../support/cli.js';
import { DockerFixture, dockerHost } from '../support/docker.js';
import { childPids, commandLine, isRunning } from '../support/proc.js';

const DEMO = 'callwire-demo';

/**
 * `npm start`'s program (scripts/start.mjs) against the test engine: it makes the
 * demo container the README's first example uses, serves, and on Ctrl-C stops the
 * server and removes nothing. (Starting a private engine when none answers is the
 * path of a fresh machine; CI's engine is already up, so that path is checked by
 * hand and described in the closing note.)
 */
describe('npm start', () => {
  const docker = new DockerFixture();
  let existed = false;
  afterAll(async () => {
    // Leave the engine as we found it: the demo container goes only if this test made it.
    if (!existed) await docker.engine.docker.getContainer(DEMO).remove({ force: true }).catch(() => undefined);
  });

  it('creates (or reuses) the demo container, serves, runs the README example, and stops on Ctrl-C leaving the container', async () => {
    existed = (await docker.engine.docker.getContainer(DEMO).inspect().catch(() => undefined)) !== undefined;
    const start = spawn(process.execPath, ['scripts/start.mjs', '--port', '0', '--wt-port', '0'], { env: { ...process.env, DOCKER_HOST: dockerHost }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    start.stdout.on('data', (d: Buffer) => (out += d.toString()));
    start.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((resolve) => start.on('exit', resolve));
    const pids = [start.pid!];
    try {
      await expect.poll(() => /ws:\/\/127\.0\.0\.1:\d+\/callwire/.exec(out)?.[0], { timeout: 60_000 }).toBeDefined();
      pids.push(...tree(start.pid!));
      expect(out).toMatch(new RegExp(`\\[npm start\\] docker: DOCKER_HOST=.*; demo container ${DEMO} \\((created from callwire-test:busybox|reused)\\)`));
      const url = /ws:\/\/127\.0\.0\.1:\d+\/callwire/.exec(out)![0];
      // The serving process runs with the server's Node flags (src/cli/node-flags.ts), so its banner misses none.
      expect(out).not.toMatch(/^ {2}node {10}without/m);
      expect(childPids(start.pid!).map(commandLine).find((argv) => argv.includes('serve'))).toEqual(expect.arrayContaining([...longLivedNodeFlags]));
      const run = runCli(['--url', url, 'exec', DEMO, '--', 'uname', '-a'], { stdin: 'ignore' });
      expect((await run.exited).code).toBe(0);
      expect(run.stdout).toMatch(/^Linux /);
      if (!existed) {
        // A demo made now writes a line a second, so the README's logs example shows something.
        const logs = runCli(['--url', url, 'subscribe', 'docker/container/logs', '--input', `{"containerId":"${DEMO}","follow":true}`, '--max-events', '2']); // stdin held open: its end would stop subscribe
        expect((await logs.exited).code).toBe(0);
        expect(logs.stdout.trim().split('\n')).toHaveLength(2);
      }
      start.kill('SIGINT');
      expect(await exited).toBe(0);
      const demo = await docker.engine.docker.getContainer(DEMO).inspect();
      expect(demo.State.Running).toBe(true);
      expect(demo.Config.Labels['callwire.demo']).toBe('true');
    } finally {
      // A failed assertion must not leave the server and its edge running.
      for (const pid of pids) if (isRunning(pid)) process.kill(pid, 'SIGKILL');
    }
  }, 90_000);
});

describe('npm start and one Ctrl-C', () => {
  it('a terminal\'s SIGINT to the whole group (start.mjs forwards its own copy too) gives live calls their grace: an exec in flight prints all its lines and exits 0', async () => {
    // Detached: a group of its own, as a terminal's foreground job is; the signal goes to the group.
    const start = spawn(process.execPath, ['scripts/start.mjs', '--port', '0', '--wt-port', '0'], { env: { ...process.env, DOCKER_HOST: dockerHost }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let out = '';
    start.stdout.on('data', (d: Buffer) => (out += d.toString()));
    start.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((resolve) => start.on('exit', resolve));
    try {
      await expect.poll(() => /ws:\/\/127\.0\.0\.1:\d+\/callwire/.exec(out)?.[0], { timeout: 60_000 }).toBeDefined();
      const url = /ws:\/\/127\.0\.0\.1:\d+\/callwire/.exec(out)![0];
      const run = runCli(['--url', url, 'exec', DEMO, '--', 'sh', '-c', 'for i in 1 2 3 4 5; do echo $i; sleep 1; done'], { stdin: 'ignore' });
      await run.waitFor(/^1\n/, 'stdout', 30_000);
      process.kill(-start.pid!, 'SIGINT');
      const { code } = await run.exited;
      expect({ code, stdout: run.stdout, stderr: run.stderr }).toEqual({ code: 0, stdout: '1\n2\n3\n4\n5\n', stderr: '' });
      expect(await exited).toBe(0);
      expect(out.match(/SIGINT: no new calls/g)).toHaveLength(1);
      expect(out).not.toContain('again: exiting now');
    } finally {
      try {
        process.kill(-start.pid!, 'SIGKILL');
      } catch {
        // the group is gone
      }
    }
  }, 90_000);
});

/** Every process under `pid`, deepest last. */
function tree(pid: number): number[] {
  let children: number[];
  try {
    children = childPids(pid);
  } catch {
    return [];
  }
  return children.flatMap((child) => [child, ...tree(child)]);
}

/**
 * `npm start` run by npm itself, its build step left out (the suite built dist/ already, and
 * a rebuild would rewrite files other tests are running): package.json's own start script
 * with `npm run build --silent` replaced by `true`, in a folder that links to this one.
 */
function npmStart(args: string[]): { child: ChildProcess; output: () => string } {
  const script = (JSON.parse(readFileSync('package.json', 'utf8')) as { scripts: { start: string } }).scripts.start;
  const dir = mkdtempSync(join(tmpdir(), 'callwire-npm-start-'));
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'npm-start-test', private: true, scripts: { start: script.replace('npm run build --silent', 'true') } }));
  for (const name of ['scripts', 'dist', 'node_modules']) symlinkSync(resolve(name), join(dir, name));
  const child = spawn('npm', ['start', '--', ...args], { cwd: dir, env: { ...process.env, DOCKER_HOST: dockerHost }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  child.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  return { child, output: () => out };
}

describe('npm start, signalled at any process of its tree', () => {
  const docker = new DockerFixture();
  let existed = false;
  beforeAll(async () => {
    existed = (await docker.engine.docker.getContainer(DEMO).inspect().catch(() => undefined)) !== undefined;
  });
  afterAll(async () => {
    if (!existed) await docker.engine.docker.getContainer(DEMO).remove({ force: true }).catch(() => undefined);
  });
  for (const target of ['npm', 'the server'] as const) {
    it(`SIGTERM to ${target} stops every process (the server and its HTTP/3 edge included), and the last line says what stopped and what was left running`, async () => {
      const run = npmStart(['--port', '0', '--wt-port', '0']);
      const pids: number[] = [];
      try {
        await expect.poll(() => /npx callwire ops --url ws:\/\/\S+/.exec(run.output())?.[0], { timeout: 60_000 }).toBeDefined();
        pids.push(...tree(run.child.pid!));
        const server = pids.find((pid) => commandLine(pid).includes('serve'));
        expect(server).toBeDefined();
        const exited = new Promise((done) => run.child.on('exit', done));
        process.kill(target === 'npm' ? run.child.pid! : server!, 'SIGTERM');
        await exited;
        await expect.poll(() => pids.filter(isRunning), { timeout: 10_000 }).toEqual([]);
        const last = run.output().trim().split('\n').at(-1);
        expect(last).toMatch(/^\[npm start\] stopped: the server \(and its HTTP\/3 edge\)\. Left running: the Docker engine \(DOCKER_HOST=.*\) and the demo container callwire-demo, which npm start did not start$/);
      } finally {
        for (const pid of [run.child.pid!, ...pids]) if (isRunning(pid)) process.kill(pid, 'SIGKILL');
      }
    }, 90_000);
  }
});
