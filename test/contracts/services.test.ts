import { afterEach, describe, expect, it } from 'vitest';
import { connect, type Client } from '../../src/client-node/index.js';
import { discoverFeatures, loadFeatures } from '../../src/conformance/index.js';
import { infoContract, serverInfo, serverLimits, serverStats, statsContract } from '../../src/contracts/index.js';
import { ServerFixture } from '../support/server-fixture.js';

/** The contract with no field to spare: what the server sends must be exactly its shape. */
const exactInfo = serverInfo.extend({ limits: serverLimits.strict(), identity: serverInfo.shape.identity.unwrap().strict().nullable() }).strict();
const exactStats = serverStats.strict();

/**
 * services/info and services/stats (spec §11.8) answer their contracts, which the
 * operations declare as output schemas (RES-4) and the client, the Lab and the
 * conformance runner read their types from.
 */
describe('the services/info and services/stats contracts', () => {
  const fx = new ServerFixture();
  const clients: Client[] = [];
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close()));
    await fx.stop();
  });
  const client = async (token?: string): Promise<Client> => {
    const c = await connect(fx.server.wsUrl, token ? { token } : {});
    clients.push(c);
    return c;
  };

  it('services/info answers the protocol, the limits the server runs with, and the caller: exactly the contract', async () => {
    const token = 'services-token-0123456789abcdef';
    await fx.start({ webTransportPort: false, maxConnections: 77, handshakeTimeoutMs: 4321, keepaliveMs: 9876, limits: { maxCallsInFlight: 33 }, tokens: [{ token, subject: 'ada', scopes: ['a', 'b'] }] });
    const info = await (await client(token)).call(infoContract, null);
    expect(exactInfo.parse(info)).toEqual(info);
    expect(info).toMatchObject({ protocol: 'callwire.v1', identity: { subject: 'ada', scopes: ['a', 'b'] } });
    expect(info.limits).toMatchObject({ maxConnections: 77, handshakeTimeoutMs: 4321, keepaliveMs: 9876, maxCallsInFlight: 33 });
    expect((await (await client()).call(infoContract, null)).identity).toBeNull();
  });

  it('services/stats counts the connections and live calls (its own included): exactly the contract', async () => {
    await fx.start({ webTransportPort: false });
    const asking = await client();
    await client();
    const stats = await asking.call(statsContract, null);
    expect(exactStats.parse(stats)).toEqual(stats);
    expect(stats).toMatchObject({ connections: 2, liveCalls: 1, openConnections: 2, refusedConnections: 0, execKillFailures: 0 });
    expect(stats.callsStarted).toBeGreaterThanOrEqual(1);
  });

  it('the conformance runner reads the limits from services/info through the contract', async () => {
    await fx.start({ webTransportPort: false, handshakeTimeoutMs: 4321, keepaliveMs: 9876, limits: { maxCallsInFlight: 33, maxNestingDepth: 40 } });
    const base = loadFeatures();
    const found = await discoverFeatures({ url: fx.server.wsUrl, codec: 'msgpack' }, base);
    expect(found.notes.join('\n')).not.toMatch(/using the features file/);
    expect(found.features.limits).toMatchObject({ handshakeTimeoutMs: 4321, keepaliveMs: 9876, maxCallsInFlight: 33, maxNestingDepth: 40 });
    expect(found.features.auth).toBe(false);
  });
});
