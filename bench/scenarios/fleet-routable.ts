/**
 * A container made and started on the engine directly, as `docker run` does: how long
 * until the gateway routes a call to it (the agent follows the engine's events and
 * beats its table), beside how long until the engine itself says it is running.
 */
import type { Bench } from '../scenario.js';
import { FLEET_GROUP, fleetPair } from './fleet-pair.js';

/** How often the gateway is asked whether it routes the new container yet. */
const POLL_MS = 5;
/** The bound is 2 s; a container not routable long after it is a failure of the run, not a figure. */
const GIVE_UP_MS = 30_000;
const ROUTED = 'routable through the gateway';
const RUNNING = 'running, as the engine answers';

export async function fleetRoutable(bench: Bench): Promise<void> {
  const { fleet, subjects, clients } = await fleetPair(bench);
  const direct = clients.get(subjects[0].name)!;
  const routed: number[] = [];
  const running: number[] = [];
  for (let round = 0; round < bench.options.runs; round++) {
    const name = `callwire-bench-routable-${process.pid}-${round}`;
    const t = performance.now();
    let removed = false;
    const whenRouted = (async (): Promise<number> => {
      while (!removed) {
        try {
          await fleet.gateway.client.call('docker/container/inspect', { containerId: name });
          return performance.now() - t;
        } catch (error) {
          if ((error as { code?: unknown }).code !== 'CONTAINER_NOT_FOUND') throw error;
          if (performance.now() - t > GIVE_UP_MS) throw new Error(`container ${name} was not routable through the gateway within ${GIVE_UP_MS} ms`);
          await new Promise((resolve) => setTimeout(resolve, POLL_MS));
        }
      }
      return NaN;
    })();
    // Read only when the container was made; a failed create ends the poll unread.
    whenRouted.catch(() => undefined);
    let containerId: string | undefined;
    try {
      ({ containerId } = await direct.call<{ containerId: string }>('docker/container/create', { image: 'callwire-test:busybox', cmd: ['sleep', '100000'], name }));
      await direct.call('docker/container/start', { containerId });
      running.push(performance.now() - t);
      routed.push(await whenRouted);
    } finally {
      removed = true;
      if (containerId !== undefined) await direct.call('docker/container/remove', { containerId, force: true });
    }
  }
  const metric = '`docker run` (create and start) on the engine directly, to';
  bench.record.runs({ group: FLEET_GROUP, metric: `${metric} ${ROUTED}`, subject: subjects[1].name, unit: 'ms' }, routed, { [RUNNING]: running });
  bench.record.runs({ group: FLEET_GROUP, metric: `${metric} ${RUNNING}`, subject: subjects[0].name, unit: 'ms' }, running);
}
