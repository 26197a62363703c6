import { connect, type NatsConnection } from '@nats-io/transport-node';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDispatcher, defineOperation, Registry, silentLogger } from '../../src/dispatcher/index.js';
import { AgentLink } from '../../src/fleet/agent-link.js';
import { FleetClients } from '../../src/fleet/fleet-clients.js';
import { GatewayLink } from '../../src/fleet/gateway-link.js';
import { NatsCluster } from '../support/nats-cluster.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { until } from '../support/wait.js';

const KIB = 1024;
const MIB = 1024 * KIB;
/** The agent's bound on what NATS has not confirmed (maxOutboundBytesPerConnection), small so the test is quick. */
const BOUND = 1 * MIB;
const ITEM_CHARS = 64 * KIB;
const ITEMS = 512; // 32 MiB: far past the bound

/**
 * BP-3/BP-4 on the link (spec §8, docs/fleet.md): an agent's calls share one NATS
 * connection, and what it published that the NATS server has not confirmed counts as
 * waiting. When that connection stops taking bytes (here a relay that stops passing what the
 * agent writes, and passes it again before a keepalive gives up), the agent's sessions are congested
 * and a stream's producer is held near the bound, though its caller granted credit for
 * all of it; once the connection moves again, every item arrives, in order.
 */
describe('backpressure on an agent\'s NATS link', () => {
  let cluster: NatsCluster;
  let proxy: TcpProxy;
  let agentNc: NatsConnection;
  let gatewayNc: NatsConnection;
  let agentLink: AgentLink;
  let gatewayLink: GatewayLink;
  let clients: FleetClients;
  let pulled = 0;

  beforeAll(async () => {
    cluster = await NatsCluster.start({ hosts: ['a'], nodes: 1 });
    const url = new URL(cluster.urls[0]!.replace('nats://', 'http://'));
    proxy = await new TcpProxy().start(Number(url.port));
    const a = cluster.users['a']!;
    const g = cluster.users['gateway']!;
    // The agent's connection goes through the relay; its keepalive is long, so a freeze is a stall, not a loss.
    agentNc = await connect({ servers: [`127.0.0.1:${proxy.port}`], user: a.user, pass: a.pass, pingInterval: 120_000 });
    gatewayNc = await connect({ servers: cluster.urls, user: g.user, pass: g.pass });
    const registry = new Registry();
    registry.register(
      defineOperation({
        name: 'test/produce',
        kind: 'subscription',
        input: z.object({ items: z.number().int() }),
        output: z.object({ n: z.number(), text: z.string() }),
        handler: async function* ({ items }) {
          for (let n = 0; n < items; n++) {
            pulled += ITEM_CHARS;
            yield { n, text: 'x'.repeat(ITEM_CHARS) };
          }
        },
      }),
    );
    // A call may hold far more than the link's bound, so only the link's congestion can hold it there.
    const dispatcher = createDispatcher({ registry, logger: silentLogger, limits: { maxOutboundBytesPerConnection: BOUND, maxBufferedBytesPerCall: 16 * MIB } });
    agentLink = new AgentLink({ nc: agentNc, host: 'a', dispatcher, logger: silentLogger });
    // start() resolves once its subscription reached the server through the relay, before any gateway dials.
    await agentLink.start();
    gatewayLink = new GatewayLink(gatewayNc, silentLogger, 16 * MIB);
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

  it('a stalled NATS connection holds the agent\'s producer near the bound, whatever credit the caller gave; then every item arrives', async () => {
    const client = clients.lease('a', { subject: 'alice', scopes: ['*'] }).client;
    // The virtual connection is open and answers; then the agent's writes stall (it still
    // reads, so NATS never drops it as a slow consumer), and only then does the stream start.
    for await (const item of client.iterate<{ n: number }>('test/produce', { items: 1 })) expect(item.n).toBe(0);
    pulled = 0;
    proxy.freeze('up');
    // Credit for the whole stream, and not resumable: only the link can hold the producer.
    const stream = client.iterate<{ n: number; text: string }>('test/produce', { items: ITEMS }, { windowBytes: 64 * MIB, resume: false })[Symbol.asyncIterator]();
    const first = stream.next();
    await until(() => pulled > 0, 'the agent started the stream', 15_000);
    // Given the time to run past the bound (which it must not), the producer is held: the bound waits unconfirmed.
    await until(() => pulled > BOUND + 4 * ITEM_CHARS, 'the producer runs past the bound', 5000).catch(() => undefined);
    console.log(`stalled link: ${(pulled / MIB).toFixed(2)} MiB pulled`);
    expect(pulled, 'bytes the producer made while the link took none').toBeLessThanOrEqual(BOUND + 4 * ITEM_CHARS);
    proxy.thaw();
    const ns: number[] = [];
    for (let step = await first; !step.done; step = await stream.next()) {
      expect(step.value.text.length).toBe(ITEM_CHARS);
      ns.push(step.value.n);
    }
    expect(ns).toEqual(Array.from({ length: ITEMS }, (_, i) => i));
  }, 60_000);
});
