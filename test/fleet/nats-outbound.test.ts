import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NatsOutbound } from '../../src/fleet/nats-outbound.js';
import { NatsCluster } from '../support/nats-cluster.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { until } from '../support/wait.js';

const BOUND = 2 * 1024 * 1024;

/**
 * BP-3/BP-4 on an agent's NATS link (spec §8): a publish is only handed to the NATS client,
 * so what the server has not confirmed counts as waiting, and past the bound the link is
 * congested (its calls are not pulled). Through a relay that goes silent, nothing is
 * confirmed: the count grows to the bound and the link says so; once the client is
 * through again, it drains.
 */
describe('an agent\'s outbound count on its NATS connection', () => {
  let cluster: NatsCluster;
  let proxy: TcpProxy;
  let nc: NatsConnection;

  beforeAll(async () => {
    cluster = await NatsCluster.start({ hosts: ['a'], nodes: 1 });
    const url = new URL(cluster.urls[0]!.replace('nats://', 'http://'));
    proxy = await new TcpProxy().start(Number(url.port));
    const a = cluster.users['a']!;
    nc = await connect({ servers: [`127.0.0.1:${proxy.port}`], user: a.user, pass: a.pass, pingInterval: 500, maxPingOut: 2, reconnectTimeWait: 100, maxReconnectAttempts: -1 });
  }, 30_000);

  afterAll(async () => {
    await nc?.close().catch(() => undefined);
    await proxy?.stop();
    await cluster?.stop();
  });

  it('is congested once the bound waits unconfirmed behind a silent relay, and drains when the client is through again', async () => {
    let drained = 0;
    const outbound = new NatsOutbound(nc, BOUND, () => drained++);
    // Confirmed at once while the relay passes bytes.
    await outbound.published(1000);
    expect(outbound.congested).toBe(false);
    proxy.freeze();
    const chunk = new Uint8Array(64 * 1024);
    const confirmations: Promise<void>[] = [];
    for (let sent = 0; sent <= BOUND; sent += chunk.byteLength) {
      nc.publish('callwire.host.a.beat', chunk);
      confirmations.push(outbound.published(chunk.byteLength));
    }
    expect(outbound.congested, 'the bound waits unconfirmed').toBe(true);
    // The client finds the relay silent and dials again (a fresh connection passes): the count drains.
    await until(() => drained > 0, 'the link drained', 20_000);
    await Promise.all(confirmations);
    expect(outbound.congested).toBe(false);
  }, 30_000);
});
