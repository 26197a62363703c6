import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Client } from '../../src/client/index.js';
import { beatOf } from '../../src/fleet/subjects.js';
import { logFleetOnFailure } from '../support/fleet-exec.js';
import { Fleet, type GatewayRun } from '../support/fleet.js';
import { SimulatedEngine } from '../support/simulated-engine.js';

const CONTAINERS = 10_000;

/**
 * A host table larger than one NATS message (issue 35, item 6): one real agent (the CLI)
 * in front of a simulated engine of 10,000 labelled containers, a real gateway, a real
 * NATS cluster with the default max_payload. The table arrives in parts and whole; the
 * gateway lists the running containers, labels and all, from it, without the agent.
 */
describe('a host table over max_payload, over a real NATS cluster', () => {
  const dir = mkdtempSync(join(tmpdir(), 'callwire-scale-'));
  let engine: SimulatedEngine;
  let fleet: Fleet;
  let gateway: GatewayRun;
  let client: Client;
  let listener: NatsConnection;
  const parts = new Set<string>();

  beforeAll(async () => {
    engine = await SimulatedEngine.start(join(dir, 'docker.sock'));
    engine.addMany(CONTAINERS, (i) => ({ role: i % 2 === 0 ? 'web' : 'db', index: String(i) }), (i) => `scale-${i}`);
    fleet = await Fleet.start({ hosts: ['a'], nodes: 1 });
    // What goes over NATS, heard as the gateway hears it: the table's parts.
    const { user, pass } = fleet.cluster.users['gateway']!;
    listener = await connect({ servers: fleet.cluster.urls, user, pass });
    listener.subscribe(beatOf('a'), {
      callback: (error, msg) => {
        if (error) return;
        const beat = msg.json<{ part?: number; parts?: number; version: number }>();
        if (beat.parts !== undefined) parts.add(`${beat.version}:${beat.part}/${beat.parts}`);
      },
    });
    await fleet.agent('a', { env: { DOCKER_HOST: engine.address } });
    gateway = await fleet.gateway({ waitHosts: ['a'] });
    client = await fleet.client(gateway);
  }, 90_000);

  beforeEach(() => logFleetOnFailure(fleet));

  afterAll(async () => {
    await listener?.close();
    await fleet?.stop();
    await engine?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('arrives in parts, each within max_payload, and is applied whole: every name routes', async () => {
    let held: number | undefined;
    for (let i = 0; i < 600 && held !== CONTAINERS; i++) {
      if (i > 0) await new Promise((resolve) => setTimeout(resolve, 100));
      const info = await client.call<{ fleet: { hosts: { id: string; containers: number }[] } }>('services/info', null);
      held = info.fleet.hosts.find((h) => h.id === 'a')?.containers;
    }
    expect(held).toBe(CONTAINERS);
    expect(parts.size).toBeGreaterThan(1);
    expect(listener.info?.max_payload).toBe(1024 * 1024);
    // The first container of the first part and the last of the last: a bare name each, routed by the gateway.
    for (const name of ['scale-0', `scale-${CONTAINERS - 1}`]) {
      const inspected = await client.call<{ Name: string }>('docker/container/inspect', { containerId: name });
      expect(inspected.Name).toBe(`/${name}`);
    }
  }, 90_000);

  it('docker/container/list of running containers comes from the gateway\'s table, labels and all, without the agent', async () => {
    const listsBefore = engine.lists;
    const answer = await client.call<{ containers: { names: string[]; labels: Record<string, string>; host: string; state: string }[]; unavailable: unknown[] }>('docker/container/list', { all: false });
    expect(answer.unavailable).toEqual([]);
    expect(answer.containers).toHaveLength(CONTAINERS);
    const row = answer.containers.find((c) => c.names[0] === '/scale-7');
    expect(row).toMatchObject({ host: 'a', state: 'running', labels: { role: 'db', index: '7' } });
    expect(engine.lists).toBe(listsBefore);
    // Every container, stopped ones too, is the agent's to answer: the engine is asked.
    await client.call('docker/container/list', { all: true });
    expect(engine.lists).toBe(listsBefore + 1);
  }, 60_000);
});
