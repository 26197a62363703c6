/**
 * What the bench reads off the NATS nodes' monitoring endpoints (`/connz`): which node a
 * fleet process is connected to, and the subscriptions every client holds.
 */
import type { NatsCluster } from '../test/support/nats-cluster.js';

/** The names the fleet's processes give their NATS connections (src/fleet/gateway.ts, src/fleet/agent.ts). */
export const GATEWAY_CONNECTION = 'callwire-gateway';
export const agentConnection = (host: string): string => `callwire-agent-${host}`;

interface ClientConnection {
  readonly name?: string;
  readonly subscriptions_list?: readonly string[];
}

/** The client connections of one node, with their subscriptions; none when the node does not answer (killed). */
async function connectionsOf(monitorUrl: string): Promise<ClientConnection[]> {
  try {
    const response = await fetch(`${monitorUrl}/connz?subs=1&limit=100000`, { signal: AbortSignal.timeout(2000) });
    return ((await response.json()) as { connections?: ClientConnection[] }).connections ?? [];
  } catch {
    return [];
  }
}

/** The node (numbered from 1) a connection named `name` is on, if any answers. */
export async function nodeOf(cluster: NatsCluster, name: string): Promise<number | undefined> {
  for (const [i, url] of cluster.monitorUrls.entries()) {
    if ((await connectionsOf(url)).some((c) => c.name === name)) return i + 1;
  }
  return undefined;
}

export interface Subscriptions {
  /** Every client's subscriptions on every node (the nodes' routes excluded). */
  readonly count: number;
  /** The distinct subjects among them. */
  readonly subjects: number;
}

export async function clusterSubscriptions(cluster: NatsCluster): Promise<Subscriptions> {
  const all = (await Promise.all(cluster.monitorUrls.map(connectionsOf))).flat().flatMap((c) => c.subscriptions_list ?? []);
  return { count: all.length, subjects: new Set(all).size };
}
