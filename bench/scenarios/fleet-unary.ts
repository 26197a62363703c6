/** A unary Docker call (`docker/container/inspect` of the bench's container) through the gateway beside the same call direct. */
import { unaryLoad } from '../measure.js';
import type { Bench } from '../scenario.js';
import { pick, recordAll, roundsOf } from './compare.js';
import { FLEET_GROUP, fleetPair } from './fleet-pair.js';

export async function fleetUnary(bench: Bench, concurrency: number): Promise<void> {
  const { subjects, clients } = await fleetPair(bench);
  const containerId = bench.container.get();
  const runs = await roundsOf(bench, subjects, bench.options.runs, (s) =>
    unaryLoad(() => clients.get(s.name)!.call('docker/container/inspect', { containerId }), concurrency, bench.options.unaryMs),
  );
  recordAll(bench.record, subjects, [
    { key: { group: FLEET_GROUP, metric: `docker/container/inspect calls/s @${concurrency} in flight`, unit: 'calls/s' }, values: pick(runs, (r) => r.callsPerSec) },
    { key: { group: FLEET_GROUP, metric: `docker/container/inspect p50 @${concurrency}`, unit: 'ms' }, values: pick(runs, (r) => r.p50Ms) },
  ]);
}
