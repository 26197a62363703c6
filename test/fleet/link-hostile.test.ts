import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '../../src/client/index.js';
import { createDispatcher, Registry, silentLogger } from '../../src/dispatcher/index.js';
import { AgentLink } from '../../src/fleet/agent-link.js';
import { GatewayLink } from '../../src/fleet/gateway-link.js';
import { encodeLink } from '../../src/fleet/link-message.js';
import { fromHost } from '../../src/fleet/subjects.js';
import { envelopes } from '../../src/protocol/index.js';
import { probeOperations } from '../../src/operations/index.js';
import { NatsCluster } from '../support/nats-cluster.js';

/**
 * A gateway reads everything every agent sends it on one NATS subscription, whose
 * callback runs inside the NATS client's reader: a throw there ends the reader, and
 * the gateway hears nothing from any host until its connection is declared stale.
 * Whatever a hostile agent's frame makes one call's handling do, it must cost that
 * call only.
 */
describe('a gateway link under a hostile agent', () => {
  let cluster: NatsCluster;
  let agentNc: NatsConnection;
  let hostileNc: NatsConnection;
  let gatewayNc: NatsConnection;
  let agentLink: AgentLink;
  let gatewayLink: GatewayLink;

  beforeAll(async () => {
    cluster = await NatsCluster.start({ hosts: ['a', 'b'], nodes: 1 });
    const a = cluster.users['a']!;
    const g = cluster.users['gateway']!;
    agentNc = await connect({ servers: cluster.urls, user: a.user, pass: a.pass });
    gatewayNc = await connect({ servers: cluster.urls, user: g.user, pass: g.pass });
    const b = cluster.users['b']!;
    hostileNc = await connect({ servers: cluster.urls, user: b.user, pass: b.pass });
    const registry = new Registry();
    registry.register(...probeOperations());
    const dispatcher = createDispatcher({ registry, logger: silentLogger });
    agentLink = new AgentLink({ nc: agentNc, host: 'a', dispatcher, logger: silentLogger });
    await agentLink.start();
    gatewayLink = new GatewayLink(gatewayNc, silentLogger, 1 << 20);
    gatewayLink.start();
  }, 30_000);

  afterAll(async () => {
    gatewayLink?.stop();
    agentLink?.stop();
    await Promise.all([agentNc?.close(), gatewayNc?.close(), hostileNc?.close()]);
    await cluster?.stop();
  });

  it('costs that call only: the gateway goes on hearing every host', async () => {
    const faulty = gatewayLink.dial('a', { subject: 'mallory', scopes: ['*'] });
    let thrown = 0;
    faulty.startCall(envelopes.requested('c1', { operationId: 'conformance/echo', input: { value: 1 } }), {
      frame: () => {
        thrown++;
        throw new Error('a handler that cannot take this frame');
      },
      lost: () => undefined,
    });
    const deadline = Date.now() + 5000;
    while (thrown === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(thrown).toBe(1);
    const other = new Client(gatewayLink.dial('a', { subject: 'alice', scopes: ['*'] }));
    const answer = await Promise.race([
      other.call('conformance/echo', { value: 2 }),
      new Promise((resolve) => setTimeout(() => resolve('no answer within 5 s'), 5000)),
    ]);
    expect(answer).toEqual({ value: 2 });
    await other.close();
  }, 30_000);

  it('another host cannot end, or speak on, the connections a gateway opened to host a, whose ids it can guess', async () => {
    const toA = new Client(gatewayLink.dial('a', { subject: 'alice', scopes: ['*'] }));
    expect(await toA.call('conformance/echo', { value: 3 })).toEqual({ value: 3 });
    // Agent b may publish only under its own host's subjects; a vc id is the gateway's id and a counter.
    for (let n = 1; n <= 50; n++) hostileNc.publish(fromHost('b', gatewayLink.id), encodeLink('lost', 0, `${gatewayLink.id}.${n.toString(36)}`));
    await hostileNc.flush();
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(await toA.call('conformance/echo', { value: 4 })).toEqual({ value: 4 });
    await toA.close();
  }, 30_000);
});
