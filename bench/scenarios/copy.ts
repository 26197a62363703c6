/**
 * `callwire cp` beside `docker cp` in the same rounds (issue 34's rows): one large file
 * out of a container and into one, and a directory of 10,000 small files each way,
 * each a whole CLI process as a user runs it. MB/s and what the copy cost the whole
 * machine per GiB (the engine, the server, both CLIs, kernel time included). Through
 * the fleet: the same copies as `HOST/CONTAINER` through the bench's gateway, NATS and
 * agent, beside the direct ones.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { costed } from '../measure.js';
import { FLEET_HOST } from '../fleet.js';
import { CALLWIRE_CP, CALLWIRE_CP_FLEET, DOCKER_CP } from '../names.js';
import type { Bench } from '../scenario.js';
import type { Subject } from '../subject.js';
import { DOCKER_CLI } from '../subjects/cli-process.js';
import { pick, recordAll, roundsOf } from './compare.js';

const MB = 1e6;
const GIB = 2 ** 30;
const SMALL_FILES = 10_000;

/** Copies `from` to `to`, one side `CONTAINER:PATH`, as the subject's CLI does. */
type Copy = (from: string, to: string) => Promise<void>;

const run = (argv: readonly string[]): Promise<void> =>
  new Promise((resolve, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`${argv.join(' ')} exited ${code}: ${stderr.trim()}`))));
  });

function inContainer(container: string, script: string): void {
  const done = spawnSync(DOCKER_CLI, ['exec', container, 'sh', '-c', script], { encoding: 'utf8' });
  if (done.status !== 0) throw new Error(`docker exec ${script}: ${done.stderr.trim()}`);
}

export async function copyThroughput(bench: Bench, throughFleet = false): Promise<void> {
  const server = bench.lineup.servers[0]!;
  const main = server.build.cli;
  const container = bench.container.get();
  const copies: Record<string, Copy> = {
    [CALLWIRE_CP]: (from, to) => run([process.execPath, main, '--url', server.addresses.wsUrl, 'cp', from, to]),
    [DOCKER_CP]: (from, to) => run([DOCKER_CLI, 'cp', from, to]),
  };
  const subjects: Subject[] = [
    { name: CALLWIRE_CP, peers: [DOCKER_CP], close: async () => undefined },
    { name: DOCKER_CP, peers: [], close: async () => undefined },
  ];
  if (throughFleet) {
    const { gateway } = await bench.fleet.get();
    // The container's operand names its host: the same container, reached through the gateway.
    const viaHost = (operand: string): string => (operand.startsWith(`${container}:`) ? `${FLEET_HOST}/${operand}` : operand);
    copies[CALLWIRE_CP_FLEET] = (from, to) => run([process.execPath, main, '--url', gateway.wsUrl, 'cp', viaHost(from), viaHost(to)]);
    subjects.unshift({ name: CALLWIRE_CP_FLEET, peers: [CALLWIRE_CP, DOCKER_CP], close: async () => undefined });
  }
  const mib = bench.options.quick ? 128 : 1024;
  const bytes = mib * 2 ** 20;
  const local = mkdtempSync(join(tmpdir(), 'bench-cp-'));
  try {
    // Random bytes, so no layer can shortcut them; the small files as a build tree has them.
    inContainer(container, `head -c ${bytes} /dev/urandom > /big && mkdir -p /many /in && cd /many && i=0; while [ $i -lt ${SMALL_FILES} ]; do echo "file $i" > f$i; i=$((i+1)); done`);
    let round = 0;
    const timed = (direction: 'out' | 'in', what: 'big' | 'many', s: Subject) =>
      costed(async () => {
        round += 1;
        const t = performance.now();
        const here = join(local, `${what}-${round}`);
        if (direction === 'out') await copies[s.name]!(`${container}:/${what}`, here);
        else await copies[s.name]!(join(local, `source-${what}`), `${container}:/in/${what}-${round}`);
        const seconds = (performance.now() - t) / 1000;
        if (direction === 'out') {
          if (what === 'big' && statSync(here).size !== bytes) throw new Error(`${s.name} copied ${statSync(here).size} of ${bytes} bytes`);
          rmSync(here, { recursive: true, force: true });
        } else inContainer(container, `rm -rf /in/${what}-${round}`);
        return what === 'big' ? bytes / MB / seconds : SMALL_FILES / seconds;
      });
    // The sources of the copies in, made once by the reference tool.
    await copies[DOCKER_CP]!(`${container}:/big`, join(local, 'source-big'));
    await copies[DOCKER_CP]!(`${container}:/many`, join(local, 'source-many'));
    for (const direction of ['out', 'in'] as const) {
      const big = await roundsOf(bench, subjects, bench.options.runs, (s) => timed(direction, 'big', s));
      const many = await roundsOf(bench, subjects, bench.options.runs, (s) => timed(direction, 'many', s));
      const verb = direction === 'out' ? 'out of' : 'into';
      recordAll(bench.record, subjects, [
        { key: { group: 'copy', metric: `${mib} MiB file ${verb} a container`, unit: 'MB/s' }, values: pick(big, (c) => c.value) },
        { key: { group: 'copy', metric: `machine CPU-seconds per GiB copied ${verb} a container`, unit: 's/GiB' }, values: pick(big, (c) => c.machineCpuSeconds / (bytes / GIB)) },
        { key: { group: 'copy', metric: `${SMALL_FILES} small files ${verb} a container`, unit: 'files/s' }, values: pick(many, (c) => c.value) },
      ]);
    }
  } finally {
    rmSync(local, { recursive: true, force: true });
    inContainer(container, 'rm -rf /big /many /in');
  }
}
