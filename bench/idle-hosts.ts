/**
 * Idle hosts for the gateway's memory rows, cheaper than an agent each: one NATS
 * connection per host, as that host's own NATS user (an agent's user may publish only
 * its own subjects), beating as an agent does (src/fleet/agent-beacon.ts) with a table
 * of containers, and answering a gateway's hello with it. No engine behind any of them.
 */
import { createHash } from 'node:crypto';
import { connect } from '@nats-io/transport-node';
import { BEAT_MS, helloSchema, type Beat } from '../src/fleet/beat.js';
import { beatOf, HELLO } from '../src/fleet/subjects.js';
import type { NatsCluster } from '../test/support/nats-cluster.js';

/** The most idle hosts a run plays: the bench's NATS cluster has a user for each. */
export const MAX_IDLE_HOSTS = 200;
export const idleHostIds = (count: number): string[] => Array.from({ length: count }, (_, i) => `idle-${i + 1}`);

export interface IdleHosts {
  stop(): Promise<void>;
}

/** `count` hosts of `containers` containers each, beating until stopped. */
export async function startIdleHosts(cluster: NatsCluster, count: number, containers: number): Promise<IdleHosts> {
  const startedAt = Date.now();
  const hosts = await Promise.all(
    idleHostIds(count).map(async (host) => {
      const { user, pass } = cluster.users[host]!;
      const nc = await connect({ servers: cluster.urls, user, pass, name: `bench-idle-${host}` });
      const table = Array.from({ length: containers }, (_, i) => ({ id: createHash('sha256').update(`${host}/${i}`).digest('hex'), names: [`${host}-container-${i}`] }));
      const beat = (withTable: boolean): void => {
        const message: Beat = { startedAt, version: 1, engine: 'up', ...(withTable ? { containers: table } : {}) };
        if (!nc.isClosed()) nc.publish(beatOf(host), JSON.stringify(message));
      };
      nc.subscribe(HELLO, {
        callback: (error, msg) => {
          if (error) return;
          const asked = helloSchema.safeParse(msg.json()).data?.hosts;
          if (!asked || asked.includes(host)) beat(true);
        },
      });
      beat(true);
      return { nc, timer: setInterval(() => beat(false), BEAT_MS) };
    }),
  );
  return {
    async stop() {
      for (const { timer } of hosts) clearInterval(timer);
      await Promise.all(hosts.map(({ nc }) => nc.close().catch(() => undefined)));
    },
  };
}
