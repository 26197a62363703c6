/** How unary latency and rate grow with calls in flight on one WebSocket (RESULTS.md "Cost growth"). */
import { fmt, unaryLoad } from '../measure.js';
import type { Bench } from '../scenario.js';
import { pick, recordAll, roundsOf } from './compare.js';

export const GROWTH_IN_FLIGHT = [1, 64, 1024] as const;
const ROUNDS = 3;

export async function growth(bench: Bench): Promise<void> {
  const names = new Set(bench.lineup.servers.map((s) => s.name));
  const subjects = bench.lineup.subjects.filter((s) => names.has(s.name));
  for (const concurrency of GROWTH_IN_FLIGHT) {
    const runs = await roundsOf(bench, subjects, ROUNDS, (s) => unaryLoad(s.echo!, concurrency, bench.options.unaryMs));
    const n = fmt(concurrency);
    recordAll(bench.record, subjects, [
      { key: { group: 'growth', metric: `unary p50, ${n} in flight`, unit: 'ms' }, values: pick(runs, (r) => r.p50Ms) },
      { key: { group: 'growth', metric: `unary p99, ${n} in flight`, unit: 'ms' }, values: pick(runs, (r) => r.p99Ms) },
      { key: { group: 'growth', metric: `unary calls/s, ${n} in flight`, unit: 'calls/s' }, values: pick(runs, (r) => r.callsPerSec) },
    ]);
  }
}
