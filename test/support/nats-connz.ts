import { readFileSync } from 'node:fs';
import type { NatsCluster } from './nats-cluster.js';

/** The monitoring address (`http: "addr:port"`) a node's configuration gives it. */
function monitorOf(cluster: NatsCluster, node: number): string {
  const m = /^http:\s*"([^"]+)"/m.exec(readFileSync(cluster.configFile(node), 'utf8'));
  if (!m) throw new Error(`node ${node}'s configuration has no http monitoring address`);
  return m[1]!;
}

/**
 * The connection names (a NATS client's `name`: `callwire-gateway`, `callwire-agent-<host>`)
 * a running node serves now, from its /connz: which node each process of a fleet is on.
 */
export async function clientsOn(cluster: NatsCluster, node: number): Promise<string[]> {
  const response = await fetch(`http://${monitorOf(cluster, node)}/connz?limit=1024`, { signal: AbortSignal.timeout(2000) });
  const body = (await response.json()) as { connections?: { name?: string }[] };
  return (body.connections ?? []).map((c) => c.name ?? '');
}
