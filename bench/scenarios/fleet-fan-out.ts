/**
 * `exec true` in 50 containers on two real engines, 25 on each (issue 35's rows): callwire's
 * fan-out, `callwire exec -l LABEL -- true` as one CLI process through a fleet gateway (hosts
 * a and b, each an agent in front of its engine: the bench's engine and one of its own),
 * beside the same 50 `docker exec CONTAINER true` run by a shell loop and by `xargs -P 8`.
 * Each round is whole processes as a user runs them, timed to the last exit code; the
 * containers are made from the local image and removed at the end.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { PrivateEngine } from '../../test/support/private-engine.js';
import { NatsCluster } from '../../test/support/nats-cluster.js';
import { startAgent, startGateway } from '../fleet.js';
import { costed } from '../measure.js';
import { DOCKER_EXEC_LOOP, DOCKER_EXEC_XARGS, FAN_OUT, FAN_OUT_8 } from '../names.js';
import type { Bench } from '../scenario.js';
import type { Subject } from '../subject.js';
import { DOCKER_CLI } from '../subjects/cli-process.js';
import { pick, recordAll, roundsOf } from './compare.js';

const PER_ENGINE = 25;
const IMAGE = 'callwire-test:busybox';
/** The hosts' ids, in the order of their engines. */
const HOSTS = ['a', 'b'] as const;

interface Container {
  readonly dockerHost: string;
  readonly id: string;
}

/** Runs `argv`; resolves with its stdout, rejects unless it exits 0. */
const run = (argv: readonly string[]): Promise<string> =>
  new Promise((resolve, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(stdout) : reject(new Error(`${argv.join(' ')} exited ${code}: ${stderr.trim().slice(-500)}`))));
  });

/** `count` running containers on `dockerHost` carrying `label`, made a few at a time. */
async function makeContainers(dockerHost: string, label: string, count: number): Promise<Container[]> {
  const made: Container[] = [];
  const one = async (): Promise<void> => {
    const id = await run([DOCKER_CLI, '-H', dockerHost, 'run', '-d', '--network', 'none', '--label', label, IMAGE, 'sleep', '100000']);
    made.push({ dockerHost, id: id.trim() });
  };
  for (let i = 0; i < count; i += 5) await Promise.all(Array.from({ length: Math.min(5, count - i) }, one));
  return made;
}

async function removeContainers(containers: readonly Container[]): Promise<void> {
  for (const host of new Set(containers.map((c) => c.dockerHost))) {
    const ids = containers.filter((c) => c.dockerHost === host).map((c) => c.id);
    await run([DOCKER_CLI, '-H', host, 'rm', '-f', ...ids]).catch(() => undefined);
  }
}

export async function fleetFanOut(bench: Bench): Promise<void> {
  const build = bench.lineup.servers[0]!.build;
  const main = build.cli;
  const engineA = process.env['DOCKER_HOST']!;
  const engineB = new PrivateEngine();
  const label = `callwire.bench-fan-out=${randomUUID().slice(0, 8)}`;
  const scratch = mkdtempSync(join(tmpdir(), 'bench-fan-out-'));
  const stops: (() => Promise<void>)[] = [];
  const containers: Container[] = [];
  try {
    const [cluster] = await Promise.all([NatsCluster.start({ hosts: [...HOSTS], nodes: 1 }), engineB.up()]);
    stops.push(() => cluster.stop());
    const dockerHosts = [engineA, engineB.dockerHost];
    for (const host of dockerHosts) containers.push(...(await makeContainers(host, label, PER_ENGINE)));
    for (const [i, host] of HOSTS.entries()) stops.push((await startAgent(build, cluster, host, dockerHosts[i])).stop);
    const gateway = await startGateway(build, cluster, HOSTS);
    stops.push(gateway.stop);
    const fanOut = (extra: string[]): string[] => [process.execPath, main, 'exec', '--url', gateway.wsUrl, '-l', label, ...extra, '--', 'true'];
    // Routable once each host's table beat has its 25: the same selection, listed.
    for (let tries = 0; ; tries++) {
      const listed = await run(fanOut(['--dry-run'])).catch(() => '');
      if (listed.trim().split('\n').length === containers.length) break;
      if (tries > 120) throw new Error(`the gateway lists ${listed.trim().split('\n').length} of the ${containers.length} containers`);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    const list = join(scratch, 'containers');
    writeFileSync(list, containers.map((c) => `${c.dockerHost} ${c.id}\n`).join(''));
    const xargsList = join(scratch, 'xargs');
    writeFileSync(xargsList, containers.map((c) => `-H ${c.dockerHost} exec ${c.id} true\n`).join(''));
    const commands: Record<string, readonly string[]> = {
      [FAN_OUT]: fanOut([]),
      [FAN_OUT_8]: fanOut(['--parallel', '8']),
      [DOCKER_EXEC_LOOP]: ['sh', '-c', `while read -r host id; do ${DOCKER_CLI} -H "$host" exec "$id" true || exit 1; done < ${list}`],
      [DOCKER_EXEC_XARGS]: ['xargs', '-a', xargsList, '-P', '8', '-L', '1', DOCKER_CLI],
    };
    const docker = [DOCKER_EXEC_LOOP, DOCKER_EXEC_XARGS];
    const subjects: Subject[] = Object.keys(commands).map((name) => ({ name, peers: name.startsWith('callwire') ? docker : [], close: async () => undefined }));
    const rounds = await roundsOf(bench, subjects, bench.options.runs, async (s) => {
      const load = loadavg()[0]!;
      const cost = await costed(async () => {
        const t = performance.now();
        await run(commands[s.name]!);
        return performance.now() - t;
      });
      return { ...cost, load };
    });
    const metric = `exec \`true\` in ${containers.length} containers on 2 engines, to the last exit code`;
    recordAll(bench.record, subjects, [
      { key: { group: 'fan-out', metric, unit: 'ms' }, values: pick(rounds, (r) => r.value) },
      { key: { group: 'fan-out', metric: `machine CPU-seconds for ${metric}`, unit: 's' }, values: pick(rounds, (r) => r.machineCpuSeconds) },
      { key: { group: 'fan-out', metric: 'load average as the round began', unit: '1-min load' }, values: pick(rounds, (r) => r.load), compare: false },
    ]);
  } finally {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    await removeContainers(containers);
    engineB.down();
    rmSync(scratch, { recursive: true, force: true });
  }
}
