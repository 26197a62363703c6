import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDispatcher, Registry, silentLogger } from '../../src/dispatcher/index.js';
import { AgentLink } from '../../src/fleet/agent-link.js';
import { FleetClients } from '../../src/fleet/fleet-clients.js';
import { GatewayLink } from '../../src/fleet/gateway-link.js';
import { probeOperations } from '../../src/operations/index.js';
import { NatsCluster } from '../support/nats-cluster.js';
import { TcpProxy } from '../support/tcp-proxy.js';

/**
 * A gateway may dial an agent the moment the agent's link has started: its first call
 * is answered, however late the agent's subscription reaches the NATS server. The
 * agent's connection runs through a relay that holds what the agent sends, so the
 * gateway's `open` and request reach the server before the agent's subscription
 * does; were they delivered to nobody, the gateway's next ping would hear the agent
 * say it does not know the connection, and the call would fail before it was ever
 * resumable (the flake seen in link-loss.test.ts under load).
 */
describe('an agent link that has started', () => {
  let cluster: NatsCluster;
  let proxy: TcpProxy;
  let agentNc: NatsConnection;
  let gatewayNc: NatsConnection;
  let agentLink: AgentLink;
  let gatewayLink: GatewayLink;
  let clients: FleetClients;

  beforeAll(async () => {
    cluster = await NatsCluster.start({ hosts: ['a'], nodes: 1 });
    proxy = await new TcpProxy().start(Number(new URL(cluster.urls[0]!).port));
    const a = cluster.users['a']!;
    const g = cluster.users['gateway']!;
    agentNc = await connect({ servers: [proxy.via(cluster.urls[0]!)], user: a.user, pass: a.pass });
    gatewayNc = await connect({ servers: cluster.urls, user: g.user, pass: g.pass });
    const registry = new Registry();
    registry.register(...probeOperations());
    agentLink = new AgentLink({ nc: agentNc, host: 'a', dispatcher: createDispatcher({ registry, logger: silentLogger }), logger: silentLogger });
    gatewayLink = new GatewayLink(gatewayNc, silentLogger, 1 << 20);
    gatewayLink.start();
    clients = new FleetClients(gatewayLink);
  }, 30_000);

  afterAll(async () => {
    await clients?.close();
    gatewayLink?.stop();
    agentLink?.stop();
    await Promise.all([agentNc?.close(), gatewayNc?.close()]);
    await proxy?.stop();
    await cluster?.stop();
  });

  it('answers a call dialled as soon as start() resolves, though its subscription reached the server late', async () => {
    proxy.freeze('up');
    const started = agentLink.start();
    const answer = (async () => {
      await started;
      return clients.lease('a', { subject: 'alice', scopes: ['*'] }).client.call('conformance/echo', { value: 1 });
    })();
    // Whatever the gateway sent by now has reached the server (its own round trip), while the agent's subscription has not.
    await new Promise((resolve) => setImmediate(resolve));
    await gatewayNc.flush();
    proxy.thaw();
    expect(await answer).toEqual({ value: 1 });
  }, 30_000);
});
