/**
 * The server's memory per idle connection and per live subscription, each build's server
 * in turn. Run first: later scenarios leave garbage that makes RSS deltas meaningless.
 */
import { fmt } from '../measure.js';
import type { Bench } from '../scenario.js';
import type { CallwireServer } from '../lineup.js';
import { untilLiveCalls } from '../stats.js';

export interface Memory {
  heapUsed: number;
  rss: number;
}
/** The server's memory after a collection. */
export const memoryOf = (server: CallwireServer): Promise<Memory> => server.ws.call<Memory>('bench/memory');
export const KIB = 1024;
export const SUBSCRIPTIONS_PER_CONNECTION = 1000;
export const LIVE_SUBSCRIPTIONS = [1_000, 10_000, 50_000] as const;

/** Records heap and RSS per `count` for every server, each beside the baseline's. */
function recordMemory(bench: Bench, metric: string, count: number, deltas: ReadonlyMap<CallwireServer, Memory>): void {
  for (const part of ['heap', 'RSS'] as const) {
    const perCount = (d: Memory): number => (part === 'heap' ? d.heapUsed : d.rss) / count / KIB;
    for (const [server, delta] of deltas) {
      const peers = Object.fromEntries([...deltas].filter(([s]) => server.peers.includes(s.name)).map(([s, d]) => [s.name, perCount(d)]));
      bench.record.one({ group: 'memory', metric: `${part} ${metric}`, subject: server.name, unit: 'KiB' }, perCount(delta), peers);
    }
  }
}

export const delta = (before: Memory, after: Memory): Memory => ({ heapUsed: after.heapUsed - before.heapUsed, rss: after.rss - before.rss });

export async function memoryPerConnection(bench: Bench): Promise<void> {
  const n = 1000;
  const deltas = new Map<CallwireServer, Memory>();
  for (const server of bench.lineup.servers) {
    const before = await memoryOf(server);
    const idle = await Promise.all(Array.from({ length: n }, () => server.connect()));
    deltas.set(server, delta(before, await memoryOf(server)));
    await Promise.all(idle.map((c) => c.close()));
  }
  recordMemory(bench, `per idle connection (${fmt(n)} open)`, n, deltas);
}

/** How memory grows with idle subscriptions, 1,000 per connection. */
export async function memoryPerSubscription(bench: Bench): Promise<void> {
  for (const n of LIVE_SUBSCRIPTIONS) {
    const deltas = new Map<CallwireServer, Memory>();
    for (const server of bench.lineup.servers) {
      const conns = await Promise.all(Array.from({ length: n / SUBSCRIPTIONS_PER_CONNECTION }, () => server.connect()));
      const before = await memoryOf(server);
      const subs = conns.flatMap((c) => Array.from({ length: SUBSCRIPTIONS_PER_CONNECTION }, () => c.subscribe('bench/idle', null).subscribe({ error: () => undefined })));
      await untilLiveCalls(server.ws, n + 1, true);
      deltas.set(server, delta(before, await memoryOf(server)));
      subs.forEach((sub) => sub.unsubscribe());
      await Promise.all(conns.map((c) => c.close()));
      await untilLiveCalls(server.ws, 1);
    }
    recordMemory(bench, `per live subscription (${fmt(n)} live)`, n, deltas);
  }
}
