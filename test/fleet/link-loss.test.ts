import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RpcError, type Client } from '../../src/client/index.js';
import { createDispatcher, Registry, silentLogger } from '../../src/dispatcher/index.js';
import { AgentLink } from '../../src/fleet/agent-link.js';
import { FleetClients } from '../../src/fleet/fleet-clients.js';
import { GatewayLink } from '../../src/fleet/gateway-link.js';
import { decodeLink } from '../../src/fleet/link-message.js';
import { probeOperations } from '../../src/operations/index.js';
import { NatsCluster } from '../support/nats-cluster.js';

/**
 * Core NATS delivers at most once: a message lost between a gateway and an agent (a
 * node that died with it, a slow consumer cut off) must never become a silent hole in
 * a call's output. Here a real NATS server carries the link, and one publish is
 * dropped on purpose: the receiver sees the gap in the link's numbering, the virtual
 * connection ends as lost, and the stream is resumed with replay (spec §4.9).
 */
describe('a link message lost on NATS', () => {
  let cluster: NatsCluster;
  let agentNc: NatsConnection;
  let gatewayNc: NatsConnection;
  let agentLink: AgentLink;
  let gatewayLink: GatewayLink;
  let clients: FleetClients;
  /** Drop the first message of `kind` after `after` more of it were sent, once per rule. */
  interface Drop {
    readonly kind: string;
    readonly after: number;
    seen: number;
    dropped: number;
  }
  const dropFromAgent: Drop[] = [];
  const dropFromGateway: Drop[] = [];
  const drop = (kind: string, after: number): Drop => ({ kind, after, seen: 0, dropped: 0 });

  /** The connection, whose publish applies `rules`. */
  const lossy = (nc: NatsConnection, rules: Drop[]): NatsConnection =>
    new Proxy(nc, {
      get(target, key, receiver) {
        if (key !== 'publish') return Reflect.get(target, key, receiver) as unknown;
        return (subject: string, data: Uint8Array) => {
          const kind = decodeLink(data)?.kind;
          for (const rule of rules) {
            if (rule.kind !== kind || rule.dropped > 0) continue;
            if (++rule.seen > rule.after) {
              rule.dropped++;
              return;
            }
          }
          target.publish(subject, data);
        };
      },
    });

  beforeAll(async () => {
    cluster = await NatsCluster.start({ hosts: ['a'], nodes: 1 });
    const a = cluster.users['a']!;
    const g = cluster.users['gateway']!;
    agentNc = await connect({ servers: cluster.urls, user: a.user, pass: a.pass });
    gatewayNc = await connect({ servers: cluster.urls, user: g.user, pass: g.pass });
    const registry = new Registry();
    registry.register(...probeOperations());
    const dispatcher = createDispatcher({ registry, logger: silentLogger });
    agentLink = new AgentLink({ nc: lossy(agentNc, dropFromAgent), host: 'a', dispatcher, logger: silentLogger });
    await agentLink.start();
    gatewayLink = new GatewayLink(lossy(gatewayNc, dropFromGateway), silentLogger, 1 << 20);
    gatewayLink.start();
    clients = new FleetClients(gatewayLink);
  }, 30_000);

  afterAll(async () => {
    await clients?.close();
    gatewayLink?.stop();
    agentLink?.stop();
    await Promise.all([agentNc?.close(), gatewayNc?.close()]);
    await cluster?.stop();
  });

  const countAll = async (client: Client, count: number): Promise<{ ns: number[]; resumed: number }> => {
    let resumed = 0;
    const off = client.on('resumed', () => resumed++);
    const ns: number[] = [];
    for await (const item of client.iterate<{ n: number }>('conformance/count', { count }, { windowBytes: 4096 })) ns.push(item.n);
    off();
    return { ns, resumed };
  };

  it('an output frame lost on its way to the gateway: the stream is resumed and every item arrives once, in order', async () => {
    dropFromAgent.push(drop('frame', 300));
    const { ns, resumed } = await countAll(clients.lease('a', { subject: 'alice', scopes: ['*'] }).client, 3000);
    expect(dropFromAgent[0]!.dropped).toBe(1);
    expect(resumed).toBe(1);
    expect(ns).toEqual(Array.from({ length: 3000 }, (_, i) => i));
  }, 30_000);

  it('a credit or acknowledgement lost on its way to the agent: the agent sees the gap, and the stream is resumed whole', async () => {
    dropFromGateway.push(drop('frame', 20));
    const { ns, resumed } = await countAll(clients.lease('a', { subject: 'bob', scopes: ['*'] }).client, 3000);
    expect(dropFromGateway[0]!.dropped).toBe(1);
    expect(resumed).toBeGreaterThanOrEqual(1);
    expect(ns).toEqual(Array.from({ length: 3000 }, (_, i) => i));
  }, 30_000);

  it('a unary call whose answer is lost ends UNAVAILABLE, never as if answered', async () => {
    dropFromAgent.push(drop('frame', 0));
    const client = clients.lease('a', { subject: 'carol', scopes: ['*'] }).client;
    const answer = await client.call('conformance/echo', { value: 1 }).catch((e: unknown) => e);
    expect(dropFromAgent.at(-1)!.dropped).toBe(1);
    expect(answer).toBeInstanceOf(RpcError);
    expect((answer as RpcError).code).toBe('UNAVAILABLE');
  }, 30_000);

  it('a caller\'s client idle past its bound is closed, and its virtual connection with it at both ends', async () => {
    const solo = new GatewayLink(gatewayNc, silentLogger, 1 << 20);
    solo.start();
    const brief = new FleetClients(solo, 300);
    const agentBefore = agentLink.openConnections;
    const lease = brief.lease('a', { subject: 'dave', scopes: ['*'] });
    expect(await lease.client.call('conformance/echo', { value: 2 })).toEqual({ value: 2 });
    expect(solo.openConnections).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 900));
    // Held while leased, however long.
    expect(brief.size).toBe(1);
    expect(solo.openConnections).toBe(1);
    lease.release();
    const deadline = Date.now() + 5000;
    while (brief.size > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(brief.size).toBe(0);
    expect(solo.openConnections).toBe(0);
    // The agent let go of it too (the others of this file stay open).
    while (agentLink.openConnections > agentBefore && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(agentLink.openConnections).toBeLessThanOrEqual(agentBefore);
    await brief.close();
    solo.stop();
  }, 30_000);
});
