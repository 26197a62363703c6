import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, connect as tcpConnect, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import Docker from 'dockerode';
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULT_URL } from '../../src/cli/defaults.js';
import { runCli } from '../support/cli.js';
import { freePorts } from '../support/ports.js';
import { PrivateEngine } from '../support/private-engine.js';
import { childPids, isRunning } from '../support/proc.js';
import { skipTitle } from '../support/skip.js';
import { sleep, until } from '../support/wait.js';

const ROOT = resolve(import.meta.dirname, '../..');
const NATS_SCRIPT = join(ROOT, 'scripts/nats-cluster.sh');
const ENGINE_A = process.env['CALLWIRE_DOCKER_ROOT'] ?? '/tmp/callwire-docker';

function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = tcpConnect(port, '127.0.0.1');
    socket.once('connect', () => resolve(socket.destroy() !== undefined));
    socket.once('error', () => resolve(false));
  });
}

/** A process and every process under it, as /proc has them now. */
function tree(pid: number): number[] {
  try {
    return [pid, ...childPids(pid).flatMap(tree)];
  } catch {
    return [];
  }
}

/**
 * `npm run fleet` (scripts/demo-fleet.sh, docs/fleet.md "Running a fleet") for real: the
 * cluster, a second engine and the processes on ports of this test's own; two hosts whose
 * `demo` containers are those of two engines; and a Ctrl-C (SIGINT to its process group,
 * as a terminal sends it) that leaves nothing it started running or listening.
 */
const demoMissing = !existsSync(NATS_SCRIPT) ? `no ${NATS_SCRIPT}` : process.getuid?.() !== 0 ? 'not root here: the demo starts a second Docker engine' : undefined;
describe.skipIf(demoMissing !== undefined)(skipTitle('npm run fleet', demoMissing), () => {
  const scratch = mkdtempSync(join(tmpdir(), 'callwire-fleet-demo-'));
  // The second engine: the demo starts it under this root, the test removes it.
  const engineB = new PrivateEngine();
  afterAll(() => {
    engineB.down();
    rmSync(scratch, { recursive: true, force: true });
  });

  it('serves a/demo and b/demo from two engines behind one gateway; Ctrl-C stops all it started and leaves no port open', async () => {
    const engineA = new Docker({ socketPath: `${ENGINE_A}/docker.sock` });
    const demoBefore = await engineA.getContainer('demo').inspect().then(() => true, () => false);
    const [port = 0, ...natsPorts] = await freePorts('127.0.0.1', 10);
    const [clientPorts, clusterPorts, httpPorts] = [natsPorts.slice(0, 3), natsPorts.slice(3, 6), natsPorts.slice(6, 9)];
    const script = spawn('bash', ['scripts/demo-fleet.sh'], {
      cwd: ROOT,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        ...process.env,
        CALLWIRE_FLEET_PORT: String(port),
        CALLWIRE_FLEET_ENGINE_B: engineB.root,
        CALLWIRE_FLEET_LOGS: join(scratch, 'logs'),
        CALLWIRE_NATS_ROOT: join(scratch, 'nats'),
        CALLWIRE_NATS_CLIENT_PORTS: clientPorts.join(' '),
        CALLWIRE_NATS_CLUSTER_PORTS: clusterPorts.join(' '),
        CALLWIRE_NATS_HTTP_PORTS: httpPorts.join(' '),
      },
    });
    let said = '';
    script.stdout.on('data', (chunk: Buffer) => (said += chunk.toString()));
    script.stderr.on('data', (chunk: Buffer) => (said += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => script.on('exit', (code) => resolve(code)));
    try {
      await until(() => said.includes('a fleet of two hosts is serving') || script.exitCode !== null, 'the demo fleet serving', 120_000);
      expect(said).toContain('a fleet of two hosts is serving');

      const url = `ws://127.0.0.1:${port}/callwire`;
      const hostname = async (container: string): Promise<string> => {
        const run = runCli(['exec', '--url', url, container, '--', 'hostname'], { stdin: 'ignore' });
        expect(await run.exited, run.stderr).toMatchObject({ code: 0 });
        return run.stdout.trim();
      };
      const engineBDocker = new Docker({ socketPath: engineB.socketPath });
      // Each HOST/NAME reaches that host's engine: its demo's hostname is that container's.
      expect(await hostname('a/demo')).toBe((await engineA.getContainer('demo').inspect()).Config.Hostname);
      expect(await hostname('b/demo')).toBe((await engineBDocker.getContainer('demo').inspect()).Config.Hostname);
      const list = runCli(['call', '--url', url, 'docker/container/list'], { stdin: 'ignore' });
      expect(await list.exited).toMatchObject({ code: 0 });
      const rows = (JSON.parse(list.stdout) as { containers: { names: string[]; host: string }[] }).containers;
      expect(rows.filter((r) => r.names.includes('/demo')).map((r) => r.host).sort()).toEqual(['a', 'b']);

      const started = tree(script.pid!).slice(1);
      expect(started.length).toBeGreaterThanOrEqual(3); // two agents and the gateway
      process.kill(-script.pid!, 'SIGINT');
      expect(await exited).toBe(130);
      expect(said).toMatch(/stopped: the gateway and the agents; the demo containers; the engine at \/tmp\/cwe-\w+ \(its images stay\); the NATS cluster/);
      expect(started.filter(isRunning)).toEqual([]);
      for (const p of [port, ...natsPorts]) expect(await listening(p), `port ${p}`).toBe(false);
      expect(existsSync(engineB.socketPath) && (await engineBDocker.ping().then(() => true, () => false))).toBe(false);
      expect(await engineA.getContainer('demo').inspect().then(() => true, () => false)).toBe(demoBefore);
    } finally {
      if (script.exitCode === null) {
        process.kill(-script.pid!, 'SIGTERM');
        await exited;
      }
    }
  }, 240_000);
});

/**
 * `npm run fleet` beside `npm start` (issue 47, item 6): the demo's gateway has a port of its
 * own by default, and a port already taken is said before anything is started, with the
 * variable that moves it. Needs no root: nothing is started.
 */
describe('npm run fleet with its gateway\'s port taken', () => {
  it('says so at once, naming CALLWIRE_FLEET_PORT, and starts nothing; its default port is not npm start\'s', async () => {
    const script = readFileSync(join(ROOT, 'scripts/demo-fleet.sh'), 'utf8');
    const fleetDefault = /^PORT="\$\{CALLWIRE_FLEET_PORT:-(\d+)\}"$/m.exec(script)?.[1];
    expect(fleetDefault).toBeDefined();
    expect(fleetDefault).not.toBe(new URL(DEFAULT_URL).port);

    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const port = (holder.address() as AddressInfo).port;
    const scratch = mkdtempSync(join(tmpdir(), 'callwire-fleet-port-'));
    // Where the script would start what it starts, were it to go on: this test's own, never the shared ones.
    const natsPorts = await freePorts('127.0.0.1', 9);
    try {
      const run = spawn('bash', ['scripts/demo-fleet.sh'], {
        cwd: ROOT,
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe'],
        env: {
          ...process.env,
          CALLWIRE_FLEET_PORT: String(port),
          CALLWIRE_FLEET_LOGS: join(scratch, 'logs'),
          CALLWIRE_FLEET_ENGINE_B: join(scratch, 'engine-b'),
          CALLWIRE_NATS_ROOT: join(scratch, 'nats'),
          CALLWIRE_NATS_CLIENT_PORTS: natsPorts.slice(0, 3).join(' '),
          CALLWIRE_NATS_CLUSTER_PORTS: natsPorts.slice(3, 6).join(' '),
          CALLWIRE_NATS_HTTP_PORTS: natsPorts.slice(6, 9).join(' '),
        },
      });
      let said = '';
      run.stderr.on('data', (chunk: Buffer) => (said += chunk.toString()));
      const exited = new Promise<number | null>((resolve) => run.on('exit', resolve));
      const early = await Promise.race([exited, sleep(10_000).then(() => 'still running' as const)]);
      if (early === 'still running') {
        // It went on to start the fleet: Ctrl-C, as a terminal sends it, stops what it started.
        process.kill(-run.pid!, 'SIGINT');
        await exited;
      }
      expect(early, said).toBe(1);
      expect(said).toContain(`[npm run fleet] port ${port} is in use (another gateway, or a callwire serve): give the fleet's gateway another one, e.g.  CALLWIRE_FLEET_PORT=${port + 10} npm run fleet`);
      expect(said).toContain('[npm run fleet] stopped: nothing');
      expect(existsSync(join(scratch, 'nats'))).toBe(false);
    } finally {
      holder.close();
      rmSync(scratch, { recursive: true, force: true });
    }
  }, 120_000);
});
