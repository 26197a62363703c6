/**
 * The fleet at scale (issue 35, item 6; bench/PROFILE.md "A fleet of 1,000 hosts"): a
 * gateway process of this build, a NATS cluster of the bench's own (one node, a user per
 * host), and `--hosts` agents of `--containers` containers each, all in this process
 * against simulated engines (bench/simulated-hosts.ts). Rows, over `--rounds`:
 *   - `exec true` on one target per host, as calls of one connection (the bare name of
 *     each resolved by the gateway's index), time to the last exit code, against one
 *     exec's round trip;
 *   - the gateway's heap and RSS with every host up, per host, against none;
 *   - beat bytes per second the gateway receives;
 *   - a container's start to routable: a new container on one host, to its bare name
 *     answering an inspect through the gateway;
 *   - where the fan-out's time goes: the CPU-seconds of the gateway process and of this
 *     process (the agents, their engines and the caller share its one thread) during it,
 *     against its wall-clock time.
 * Writes bench/results/fleet-scale.json (the bench's results format).
 *   npx tsx bench/fleet-scale.ts [--hosts 1000] [--containers 100] [--rounds 3] [--parallel 64]
 */
import { connect } from '@nats-io/transport-node';
import { NatsCluster } from '../test/support/nats-cluster.js';
import { loadBuild, THIS_DIST } from './built.js';
import { untilHostsUp } from './fleet.js';
import { median, processCpu } from './measure.js';
import { commitMeasured, machineInfo, writeResults } from './results.js';
import { Recorder, type RowKey } from './rows.js';
import { startBenchProcess } from './server-process.js';
import { scaleHostIds, startSimulatedHosts, targetOf } from './simulated-hosts.js';

const arg = (name: string, fallback: number): number => {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 ? Number(process.argv[at + 1]) : fallback;
};
const HOSTS = arg('hosts', 1000);
const CONTAINERS = arg('containers', 100);
const ROUNDS = arg('rounds', 3);
/** Execs in flight at once: the CLI's `--parallel` default (issue 35). */
const PARALLEL = arg('parallel', 64);
const OUT = 'bench/results/fleet-scale.json';
const KIB = 1024;
const MIB = 1024 * 1024;
/** What bench/RESULTS.md measured per idle host (200 idle hosts of 10 containers), before labels and list rows were in the table. */
const IDLE_HOST_HEAP_KIB = 3.66;
const GROUP = 'fleet at scale';
const SUBJECT = `callwire fleet, ${HOSTS.toLocaleString('en-US')} simulated hosts × ${CONTAINERS} containers`;

interface Memory {
  heapUsed: number;
  rss: number;
}

const build = await loadBuild(process.env['CALLWIRE_DIST'] ?? THIS_DIST);
const started = performance.now();
const loadAtStart = (await import('node:os')).loadavg()[0];
const hosts = scaleHostIds(HOSTS);
const cluster = await NatsCluster.start({ hosts, nodes: 1 });
const stops: (() => Promise<void>)[] = [() => cluster.stop()];
const record = new Recorder((row) => process.stderr.write(`${row.metric}: ${row.value.toFixed(2)} ${row.unit}${row.min === undefined ? '' : ` (${row.min.toFixed(2)}–${row.max?.toFixed(2)})`}\n`));
const key = (metric: string, unit: string): RowKey => ({ group: GROUP, metric, subject: SUBJECT, unit });
try {
  const { user, pass } = cluster.users['gateway']!;
  const gateway = await startBenchProcess<{ wsUrl: string }>(build, 'bench/fleet-gateway.ts', { CALLWIRE_BENCH_NATS: JSON.stringify({ servers: cluster.urls, user, pass }) });
  stops.push(() => gateway.stop());
  const client = await build.client.connect(gateway.info.wsUrl);
  stops.push(() => client.close());
  const memory = (): Promise<Memory> => client.call<Memory>('bench/memory', null);
  const alone = await memory();
  process.stderr.write(`starting ${HOSTS} agents of ${CONTAINERS} containers…\n`);
  const simulated = await startSimulatedHosts(build.dist, cluster, hosts, CONTAINERS);
  stops.push(() => simulated.stop());
  await untilHostsUp(client, HOSTS);
  // Every table in: each host's target routes by its bare name.
  for (const host of hosts) {
    for (let i = 0; ; i++) {
      const ok = await client.call('docker/container/inspect', { containerId: targetOf(host) }).then(() => true, () => false);
      if (ok) break;
      if (i > 200) throw new Error(`${targetOf(host)} never routable`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  const exec = async (target: string): Promise<void> => {
    const result = await build.client.exec(client, target, ['true']).result;
    if (result.exitCode !== 0) throw new Error(`${target}: exit ${result.exitCode}`);
  };
  // Idle: every host up, no call made yet (a call leaves the caller's client of each host open for a minute).
  const idle: Memory[] = [];
  for (let round = 0; round < ROUNDS; round++) idle.push(await memory());
  const single: number[] = [];
  const fanOut: number[] = [];
  const gatewayCpu: number[] = [];
  const benchCpu: number[] = [];
  const readings: Memory[] = [];
  const beatRates: number[] = [];
  const routable: number[] = [];
  const beats = await connect({ servers: cluster.urls, user, pass, name: 'bench-beat-counter' });
  stops.push(() => beats.close());
  let beatBytes = 0;
  beats.subscribe('callwire.host.*.beat', {
    callback: (error, msg) => {
      if (!error) beatBytes += msg.data.byteLength;
    },
  });
  for (let round = 0; round < ROUNDS; round++) {
    const one: number[] = [];
    for (let i = 0; i < 20; i++) {
      const t = performance.now();
      await exec(targetOf(hosts[i % hosts.length]!));
      one.push(performance.now() - t);
    }
    single.push(median(one));
    const t = performance.now();
    const gatewayCpuBefore = processCpu(gateway.pid);
    const benchCpuBefore = process.cpuUsage();
    // One call per target on one connection, PARALLEL at a time: a caller's exec sessions are capped (256 by default), a fan-out's too.
    const queue = [...hosts];
    await Promise.all(
      Array.from({ length: PARALLEL }, async () => {
        for (let host = queue.shift(); host !== undefined; host = queue.shift()) await exec(targetOf(host));
      }),
    );
    fanOut.push(performance.now() - t);
    const benchCpuUsed = process.cpuUsage(benchCpuBefore);
    gatewayCpu.push(processCpu(gateway.pid) - gatewayCpuBefore);
    benchCpu.push((benchCpuUsed.user + benchCpuUsed.system) / 1e6);
    readings.push(await memory());
    beatBytes = 0;
    const from = performance.now();
    await new Promise((resolve) => setTimeout(resolve, 5000));
    beatRates.push(beatBytes / ((performance.now() - from) / 1000));
    const host = hosts[(round * 7919) % hosts.length]!;
    const name = `fresh-${round}-${host}`;
    const t0 = performance.now();
    simulated.engines.get(host)!.add(name, { role: 'fresh' });
    for (;;) {
      const ok = await client.call('docker/container/inspect', { containerId: name }).then(() => true, () => false);
      if (ok) break;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    routable.push(performance.now() - t0);
  }
  const n = HOSTS.toLocaleString('en-US');
  record.runs(key(`exec \`true\` on ${n} targets across ${n} hosts, to the last exit code (${PARALLEL} at a time)`, 'ms'), fanOut, { 'one exec\'s round trip (median of 20)': single });
  record.runs(key('one exec `true` round trip (median of 20)', 'ms'), single);
  const fanOutSeconds = fanOut.map((ms) => ms / 1000);
  record.runs(key(`the gateway's CPU-seconds during the fan-out to ${n} targets`, 's'), gatewayCpu, { 'the fan-out\'s wall-clock seconds': fanOutSeconds });
  record.runs(key(`CPU-seconds during the fan-out of the one process running the ${n} agents, their engines and the caller`, 's'), benchCpu, { 'the fan-out\'s wall-clock seconds': fanOutSeconds });
  for (const part of ['heap', 'RSS'] as const) {
    const of = (m: Memory): number => (part === 'heap' ? m.heapUsed : m.rss);
    record.runs(key(`gateway ${part} with ${n} idle hosts × ${CONTAINERS} containers`, 'MiB'), idle.map((r) => of(r) / MIB), { 'no hosts': idle.map(() => of(alone) / MIB) });
    const perHost = idle.map((r) => (of(r) - of(alone)) / HOSTS / KIB);
    record.runs(key(`gateway ${part} per idle host (${CONTAINERS} containers with labels)`, 'KiB'), perHost, part === 'heap' ? { 'an idle host of 10 containers, before (3.66 KiB)': perHost.map(() => IDLE_HOST_HEAP_KIB) } : {});
    record.runs(key(`gateway ${part} per host after a fan-out to every host`, 'KiB'), readings.map((r) => (of(r) - of(alone)) / HOSTS / KIB));
  }
  record.runs(key(`heartbeat bytes per second at the gateway (${n} hosts)`, 'KiB/s'), beatRates.map((b) => b / KIB));
  record.runs(key(`a container's start to routable by its bare name (${n} hosts × ${CONTAINERS})`, 'ms'), routable);
} finally {
  for (const stop of stops.reverse()) await stop().catch((error: unknown) => process.stderr.write(`stop: ${String(error)}\n`));
}
writeResults(OUT, {
  date: new Date().toISOString(),
  command: `npx tsx ${process.argv.slice(1).join(' ').replace(/^.*bench\//, 'bench/')}`,
  machine: machineInfo(),
  ...(commitMeasured() ? { commit: commitMeasured()! } : {}),
  ...(loadAtStart === undefined ? {} : { loadAtStart }),
  runs: ROUNDS,
  seconds: Math.round((performance.now() - started) / 1000),
  skipped: [],
  rows: record.rows,
});
process.stderr.write(`wrote ${OUT}\n`);
process.exit(0);
