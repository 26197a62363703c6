/** Total items/s of many concurrent 100 B subscriptions, against one subscription's. */
import type { Client } from '../../src/client/index.js';
import { fmt, spread } from '../measure.js';
import type { Bench } from '../scenario.js';
import type { CallwireServer } from '../lineup.js';
import { untilLiveCalls } from '../stats.js';

export const SCALING_SUBSCRIPTIONS = [1, 100, 10_000] as const;
const MAX_CONNECTIONS = 10;
const WARM_UP_MS = 500;
const MEASURE_MS = 2000;

async function itemsPerSecond(server: CallwireServer, conns: readonly Client[], n: number): Promise<number> {
  let items = 0;
  const subs = Array.from({ length: n }, (_, i) =>
    conns[i % conns.length]!.subscribe('bench/stream', { items: 100_000_000, itemBytes: 100 }).subscribe({ next: () => items++, error: () => undefined }),
  );
  await new Promise((r) => setTimeout(r, WARM_UP_MS));
  const from = items;
  const t = performance.now();
  await new Promise((r) => setTimeout(r, MEASURE_MS));
  const rate = (items - from) / ((performance.now() - t) / 1000);
  subs.forEach((s) => s.unsubscribe());
  await untilLiveCalls(server.ws, 1, false, 50);
  return rate;
}

export async function scaling(bench: Bench): Promise<void> {
  const { servers } = bench.lineup;
  const single = new Map<CallwireServer, number>();
  for (const n of SCALING_SUBSCRIPTIONS) {
    const conns = new Map<CallwireServer, Client[]>();
    for (const server of servers) conns.set(server, await Promise.all(Array.from({ length: Math.min(n, MAX_CONNECTIONS) }, () => server.connect())));
    // Each build's server in turn within a round, the order alternating, as measure.ts's interleaved does for two builds.
    const rates = new Map<CallwireServer, number[]>(servers.map((s) => [s, []]));
    for (let round = 0; round < bench.options.runs; round++) {
      for (const server of round % 2 ? [...servers].reverse() : servers) rates.get(server)!.push(await itemsPerSecond(server, conns.get(server)!, n));
    }
    for (const server of servers) {
      const own = rates.get(server)!;
      if (n === 1) single.set(server, spread(own).median);
      const peers: Record<string, number[]> = { '1 subscription': own.map(() => single.get(server)!) };
      for (const other of servers) if (server.peers.includes(other.name)) peers[other.name] = rates.get(other)!;
      bench.record.runs({ group: 'scaling', metric: `items/s, 100 B items, ${fmt(n)} concurrent subscription(s)`, subject: server.name, unit: 'items/s' }, own, peers);
    }
    await Promise.all([...conns.values()].flat().map((c) => c.close()));
  }
}
