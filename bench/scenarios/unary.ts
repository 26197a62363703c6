/** Unary round trips: `concurrency` callers loop on one echo call each, every subject that has one. */
import { unaryLoad } from '../measure.js';
import type { Bench } from '../scenario.js';
import { pick, recordAll, roundsOf } from './compare.js';

export async function unary(bench: Bench, concurrency: number): Promise<void> {
  const subjects = bench.lineup.subjects.filter((s) => s.echo);
  const runs = await roundsOf(bench, subjects, bench.options.runs, (s) => unaryLoad(s.echo!, concurrency, bench.options.unaryMs));
  recordAll(bench.record, subjects, [
    { key: { group: 'unary', metric: `calls/s @${concurrency} in flight`, unit: 'calls/s' }, values: pick(runs, (r) => r.callsPerSec) },
    { key: { group: 'unary', metric: `p50 @${concurrency}`, unit: 'ms' }, values: pick(runs, (r) => r.p50Ms) },
    { key: { group: 'unary', metric: `p99 @${concurrency}`, unit: 'ms' }, values: pick(runs, (r) => r.p99Ms) },
  ]);
}
