/**
 * The NATS subscriptions and subjects the fleet holds (every client on every node, from
 * the nodes' monitoring endpoints) with no call live, and with many live calls through
 * the gateway: followed logs of a container, each live from the caller to the engine.
 * The design's goal is that the count does not grow with calls (one subscription per
 * agent and per gateway, however many calls).
 */
import { spawnSync } from 'node:child_process';
import { setMaxListeners } from 'node:events';
import { fmt } from '../measure.js';
import { clusterSubscriptions } from '../nats-monitor.js';
import type { Bench } from '../scenario.js';
import { untilStats } from '../stats.js';
import { DOCKER_CLI } from '../subjects/cli-process.js';
import { FLEET_GROUP, fleetPair } from './fleet-pair.js';

/** What its log says at once, so that each followed call shows it reached the engine. */
const READY = 'ready';
const GIVE_UP_MS = 60_000;
const NONE_LIVE = 'no live calls';
/**
 * Calls opened at a time, each batch live before the next: a thousand at once on a loaded
 * machine held the agent's heartbeat past the gateway's 3 s, and the host went down.
 */
const BATCH = 100;

export async function fleetSubscriptions(bench: Bench): Promise<void> {
  const { fleet, subjects } = await fleetPair(bench);
  const calls = bench.options.quick ? 200 : 1000;
  const run = spawnSync(DOCKER_CLI, ['run', '-d', '--network', 'none', '--label', 'callwire.bench=1', 'callwire-test:busybox', 'sh', '-c', `echo ${READY}; exec sleep 100000`], { encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`docker run failed: ${run.stderr.trim()}`);
  const containerId = run.stdout.trim();
  const client = fleet.gateway.client;
  const stop = new AbortController();
  try {
    const idle = await clusterSubscriptions(fleet.cluster);
    let ready = 0;
    let failed: unknown;
    setMaxListeners(calls + 10, stop.signal);
    for (let opened = 0; opened < calls; ) {
      for (const end = Math.min(calls, opened + BATCH); opened < end; opened++) {
        void (async () => {
          for await (const _line of client.iterate('docker/container/logs', { containerId, follow: true }, { signal: stop.signal })) ready++;
        })().catch((error: unknown) => {
          if (!stop.signal.aborted) failed ??= error;
        });
      }
      const deadline = performance.now() + GIVE_UP_MS;
      while (ready < opened) {
        if (failed) throw new Error(`a followed log through the gateway failed (${ready} of ${opened} had reached the engine): ${String(failed)}`);
        if (performance.now() > deadline) throw new Error(`${ready} of ${opened} followed logs reached the engine within ${GIVE_UP_MS} ms`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
    const live = await clusterSubscriptions(fleet.cluster);
    const subject = subjects[1].name;
    const per1000 = (n: number, m: number): number => ((n - m) / calls) * 1000;
    bench.record.one({ group: FLEET_GROUP, metric: `NATS subscriptions, every client, ${fmt(calls)} live calls`, subject, unit: 'subscriptions' }, live.count, { [NONE_LIVE]: idle.count });
    bench.record.one({ group: FLEET_GROUP, metric: 'NATS subscriptions added per 1,000 live calls', subject, unit: 'subscriptions' }, per1000(live.count, idle.count));
    bench.record.one({ group: FLEET_GROUP, metric: `NATS subjects subscribed, ${fmt(calls)} live calls`, subject, unit: 'subjects' }, live.subjects, { [NONE_LIVE]: idle.subjects });
    bench.record.one({ group: FLEET_GROUP, metric: 'NATS subjects added per 1,000 live calls', subject, unit: 'subjects' }, per1000(live.subjects, idle.subjects));
  } finally {
    stop.abort();
    // The gateway's own stats call is live while it counts.
    await untilStats(client, (stats) => stats.liveCalls <= 1, 100, { ms: GIVE_UP_MS, what: 'the followed logs did not end' });
    spawnSync(DOCKER_CLI, ['rm', '-f', containerId]);
  }
}
