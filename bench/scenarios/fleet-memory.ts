/**
 * A gateway's memory per idle host: a fresh gateway each round (no other scenario's
 * garbage in it), read after a collection with the bench's agent alone, then with
 * `count` more hosts beating (bench/idle-hosts.ts), each with a table of containers.
 */
import { fmt } from '../measure.js';
import { untilHostsUp } from '../fleet.js';
import { MAX_IDLE_HOSTS, startIdleHosts } from '../idle-hosts.js';
import type { Bench } from '../scenario.js';
import { delta, KIB, type Memory } from './memory.js';
import { FLEET_GROUP, fleetPair } from './fleet-pair.js';

const CONTAINERS_PER_HOST = 10;
const MIB = 1024 * 1024;

export async function fleetMemoryPerIdleHost(bench: Bench): Promise<void> {
  const { fleet, subjects } = await fleetPair(bench);
  const count = bench.options.quick ? 50 : MAX_IDLE_HOSTS;
  const readings: { alone: Memory; idle: Memory }[] = [];
  for (let round = 0; round < bench.options.runs; round++) {
    const gateway = await fleet.startGateway();
    try {
      const memory = (): Promise<Memory> => gateway.client.call<Memory>('bench/memory', null);
      const alone = await memory();
      const hosts = await startIdleHosts(fleet.cluster, count, CONTAINERS_PER_HOST);
      try {
        await untilHostsUp(gateway.client, count + 1);
        readings.push({ alone, idle: await memory() });
      } finally {
        await hosts.stop();
      }
    } finally {
      await gateway.stop();
    }
  }
  const subject = subjects[1].name;
  const hosts = `${fmt(count)} idle hosts of ${CONTAINERS_PER_HOST} containers`;
  for (const part of ['heap', 'RSS'] as const) {
    const of = (m: Memory): number => (part === 'heap' ? m.heapUsed : m.rss);
    bench.record.runs({ group: FLEET_GROUP, metric: `gateway ${part} per idle host (${hosts})`, subject, unit: 'KiB' }, readings.map((r) => of(delta(r.alone, r.idle)) / count / KIB));
    bench.record.runs({ group: FLEET_GROUP, metric: `gateway ${part} with ${hosts}`, subject, unit: 'MiB' }, readings.map((r) => of(r.idle) / MIB), {
      'no idle hosts': readings.map((r) => of(r.alone) / MIB),
    });
  }
}
