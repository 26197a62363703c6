import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { RpcError, type Client } from '../../src/client/index.js';
import { MAX_TABLE_ENTRIES } from '../../src/fleet/beat-gate.js';
import type { Beat } from '../../src/fleet/beat.js';
import { beatOf } from '../../src/fleet/subjects.js';
import { logFleetOnFailure } from '../support/fleet-exec.js';
import { Fleet, type GatewayRun } from '../support/fleet.js';
import { HostileAgent } from '../support/hostile-agent.js';
import { SimulatedEngine } from '../support/simulated-engine.js';
import { until } from '../support/wait.js';

/**
 * What an agent announces when it has no table to give (issue 46, item 3, and its class): its
 * engine not answering the list (before dockerd started, or once it stopped), or a table over
 * what a gateway takes. Never an empty table, which would free its names for another host:
 * a beat that says the table is withheld. Host a is the real agent (the CLI) in front of a
 * simulated engine on a socket that starts and stops under it; host b is a hostile agent
 * announcing a's container name; what goes over NATS is heard as the gateway hears it.
 */
describe('an agent that cannot give its table says so, and keeps its names', () => {
  const dir = mkdtempSync(join(tmpdir(), 'callwire-withheld-'));
  const socket = join(dir, 'engine.sock');
  let engine: SimulatedEngine | undefined;
  let fleet: Fleet;
  let gateway: GatewayRun;
  let client: Client;
  let hostile: HostileAgent;
  let listener: NatsConnection;
  const beats: Beat[] = [];

  beforeAll(async () => {
    fleet = await Fleet.start({ hosts: ['a', 'b'], nodes: 1 });
    const { user, pass } = fleet.cluster.users['gateway']!;
    listener = await connect({ servers: fleet.cluster.urls, user, pass });
    listener.subscribe(beatOf('a'), { callback: (error, msg) => void (error ?? beats.push(msg.json<Beat>())) });
    await listener.flush();
    // Nothing listens at the socket yet: the agent starts before its engine, as after a reboot.
    await fleet.agent('a', { env: { DOCKER_HOST: `unix://${socket}` } });
    hostile = await HostileAgent.start(fleet.cluster, 'b');
    hostile.announce(['web']);
    // b never answers: a merged list waits for it 1 s.
    gateway = await fleet.gateway({ extraArgs: ['--fleet-list-deadline', '1'], waitHosts: ['a', 'b'] });
    client = await fleet.client(gateway);
  }, 90_000);

  beforeEach(() => logFleetOnFailure(fleet));

  afterAll(async () => {
    await hostile?.stop();
    await listener?.close();
    await fleet?.stop();
    await engine?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const tables = (): Beat[] => beats.filter((b) => b.containers !== undefined || b.withheld !== undefined);
  const routeOf = async (name: string): Promise<string> => {
    const answer = await client.call('docker/container/inspect', { containerId: name }).catch((e: unknown) => e);
    return answer instanceof RpcError ? answer.code : 'ok';
  };

  it('its engine not answering yet: the table is withheld, never empty; once it answers, the table comes', async () => {
    await until(() => tables().length > 0, 'a table beat of a', 10_000);
    expect(tables().every((b) => b.containers === undefined && b.withheld === 'engine-down'), JSON.stringify(tables())).toBe(true);

    engine = await SimulatedEngine.start(socket);
    engine.add('web');
    await until(() => tables().some((b) => b.containers?.some((c) => c.names.includes('web'))), 'a\'s table once its engine answers', 15_000);
    // a's web and b's announcement of it: ambiguous, as long as a's table holds it.
    for (let i = 0; i < 100 && (await routeOf('web')) !== 'INVALID_INPUT'; i++) await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await routeOf('web')).toBe('INVALID_INPUT');
  }, 60_000);

  it('its engine stopping: the table is withheld again, a\'s names stay, and a list names a unavailable rather than answer from the old table', async () => {
    const before = beats.length;
    await engine!.close();
    engine = undefined;
    await until(() => beats.slice(before).some((b) => b.withheld === 'engine-down'), 'a beat withholding the table as its engine is down', 15_000);
    expect(beats.slice(before).filter((b) => b.containers !== undefined)).toEqual([]);
    expect(await routeOf('web')).toBe('INVALID_INPUT');
    const list = await client.call<{ containers: { host: string }[]; unavailable: { host: string }[] }>('docker/container/list', { all: false });
    expect(list.containers.filter((c) => c.host === 'a')).toEqual([]);
    expect(list.unavailable.map((u) => u.host)).toContain('a');
  }, 60_000);

  it('its engine back with a table over a gateway\'s bounds: withheld at a new version, never sent; a\'s names stay', async () => {
    const before = beats.length;
    engine = await SimulatedEngine.start(socket);
    engine.add('web');
    engine.addMany(MAX_TABLE_ENTRIES, () => ({}), (i) => `many-${i}`);
    await until(() => beats.slice(before).some((b) => b.withheld === 'too-large'), 'a beat withholding the table as too large', 15_000);
    const since = beats.slice(before);
    expect(since.filter((b) => b.containers !== undefined), 'tables sent once it was over the bound').toEqual([]);
    expect(await routeOf('web')).toBe('INVALID_INPUT');
    expect(fleet.agents.get('a')!.stderr).toMatch(/the container table is larger than a table may be/);
  }, 60_000);
});
