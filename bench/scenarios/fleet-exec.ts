/**
 * Exec through the fleet beside exec straight to `callwire serve` on the engine's
 * machine: the round trip of `true` (its median and its tail over many execs a round)
 * and `dd`'s throughput (bench/scenarios/exec.ts's rows, for the two paths).
 */
import { percentile } from '../measure.js';
import type { Bench } from '../scenario.js';
import { pick, recordAll, roundsOf } from './compare.js';
import { execThroughput } from './exec.js';
import { FLEET_GROUP, fleetPair } from './fleet-pair.js';

/** Execs of `true` a subject runs each round, one after another: enough for a 99th percentile to be one of the slowest. */
const execsPerRound = (quick: boolean): number => (quick ? 30 : 100);

export async function fleetExecRoundTrip(bench: Bench): Promise<void> {
  const { subjects } = await fleetPair(bench);
  const container = bench.container.get();
  const n = execsPerRound(bench.options.quick);
  const runs = await roundsOf(bench, subjects, bench.options.runs, async (s) => {
    const ms: number[] = [];
    for (let i = 0; i < n; i++) {
      const t = performance.now();
      await s.exec!(container, ['true']);
      ms.push(performance.now() - t);
    }
    ms.sort((a, b) => a - b);
    return { p50: percentile(ms, 50), p99: percentile(ms, 99) };
  });
  recordAll(bench.record, subjects, [
    { key: { group: FLEET_GROUP, metric: `exec \`true\` p50 of ${n}`, unit: 'ms' }, values: pick(runs, (r) => r.p50) },
    { key: { group: FLEET_GROUP, metric: `exec \`true\` p99 of ${n}`, unit: 'ms' }, values: pick(runs, (r) => r.p99) },
  ]);
}

export async function fleetExecThroughput(bench: Bench): Promise<void> {
  const { subjects } = await fleetPair(bench);
  await execThroughput(bench, subjects, FLEET_GROUP);
}
