import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import { DockerFixture, RUN_LABEL, TEST_IMAGE } from '../support/docker.js';
import { logFleetOnFailure, within } from '../support/fleet-exec.js';
import { Fleet, type GatewayRun } from '../support/fleet.js';
import { SimulatedEngine } from '../support/simulated-engine.js';

/**
 * A's names across a restart of its agent (issue 46, item 3): a reboot where the agent
 * starts before dockerd, its engine socket there but answering nothing. Host a is the real
 * agent beside the test engine, host b a real agent beside a simulated engine that holds a
 * container of the same name (its execs exit 0 at once, and it counts them), the gateway
 * the real CLI. An agent that cannot list its engine has not found it empty: a's names stay
 * reserved until a table from an engine that answered replaces them.
 */
describe('a host\'s names across its agent\'s restart with its engine down', () => {
  const docker = new DockerFixture();
  const dir = mkdtempSync(join(tmpdir(), 'callwire-restart-'));
  const run8 = docker.runId.slice(0, 8);
  /** On both hosts: ambiguous for as long as a's table holds it. */
  const shared = `shared-${run8}`;
  /** On a alone, removed while a's agent is down: reserved until an engine that answered says it is gone. */
  const removed = `removed-${run8}`;
  let engineB: SimulatedEngine;
  let fleet: Fleet;
  let gateway: GatewayRun;

  beforeAll(async () => {
    for (const name of [shared, removed]) {
      const created = await docker.engine.docker.createContainer({ Image: TEST_IMAGE, name, Cmd: ['sleep', '1000000'], Labels: { [RUN_LABEL]: docker.runId }, HostConfig: { NetworkMode: 'none' } });
      await created.start();
    }
    engineB = await SimulatedEngine.start(join(dir, 'b.sock'));
    engineB.add(shared);
    fleet = await Fleet.start({ hosts: ['a', 'b'], nodes: 1 });
    await fleet.agent('a');
    await fleet.agent('b', { env: { DOCKER_HOST: engineB.address } });
    gateway = await fleet.gateway({ waitHosts: ['a', 'b'] });
  }, 90_000);

  beforeEach(() => logFleetOnFailure(fleet));

  afterAll(async () => {
    await fleet?.stop();
    await engineB?.close();
    await docker.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  /** `callwire exec NAME -- true` through the gateway: its exit code and what it said. */
  async function exec(name: string): Promise<{ code: number | null; stderr: string }> {
    const run = runCli(['exec', '--url', gateway.wsUrl, name, '--', 'true'], { stdin: 'ignore' });
    const { code } = await within(run.exited, 20_000, `exec ${name}`);
    return { code, stderr: run.stderr };
  }

  const ambiguous = new RegExp(`container ${shared} is ambiguous in the fleet: name it as one of a/${shared}, b/${shared} \\(INVALID_INPUT\\)`);

  it('a up, a killed, a back with no engine: the shared name stays ambiguous and never runs on b; a name only a held stays a\'s', async () => {
    expect(await exec(shared)).toMatchObject({ code: 121, stderr: expect.stringMatching(ambiguous) as unknown });

    fleet.agents.get('a')!.child.kill('SIGKILL');
    await fleet.hostState(gateway, 'a', 'down');
    expect(await exec(shared)).toMatchObject({ code: 121, stderr: expect.stringMatching(ambiguous) as unknown });
    await docker.engine.docker.getContainer(removed).remove({ force: true });

    // A socket file nothing listens on: dockerd not started yet.
    const dead = join(dir, 'dead.sock');
    await new Promise<void>((resolve) => {
      const server = createServer();
      server.listen(dead, () => server.close(() => resolve()));
    });
    await fleet.agent('a', { env: { DOCKER_HOST: `unix://${dead}` } });
    await until(gateway, 'a', (h) => h.state === 'up' && h.engine === 'down');

    const after = await exec(shared);
    expect(after.stderr).not.toMatch(/running on fleet host b/);
    expect(after).toMatchObject({ code: 121, stderr: expect.stringMatching(ambiguous) as unknown });
    expect(engineB.execs).toBe(0);
    // Still a's (an engine that does not answer cannot say it is gone): the call goes to a, whose engine fails it.
    const onA = await exec(removed);
    expect(onA.code).not.toBe(0);
    expect(onA.stderr).not.toMatch(/no such container in the fleet/);

    // An engine that answers: its table replaces what a's names were, and the removed one is gone.
    fleet.agents.get('a')!.child.kill('SIGKILL');
    await fleet.agent('a');
    await until(gateway, 'a', (h) => h.state === 'up' && h.engine === 'up');
    for (let i = 0; i < 100 && !/no such container in the fleet/.test((await exec(removed)).stderr); i++) await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await exec(removed)).toMatchObject({ code: 125, stderr: expect.stringMatching(new RegExp(`no such container in the fleet: ${removed}`)) as unknown });
    expect(await exec(shared)).toMatchObject({ code: 121, stderr: expect.stringMatching(ambiguous) as unknown });
    expect(engineB.execs).toBe(0);
  }, 120_000);

  /** Polls the gateway's services/info until `host`'s row passes `check`. */
  async function until(on: GatewayRun, host: string, check: (row: { state: string; engine: string }) => boolean): Promise<void> {
    const client = await fleet.client(on);
    let row: { state: string; engine: string } | undefined;
    for (let i = 0; i < 300; i++) {
      const info = await client.call<{ fleet: { hosts: { id: string; state: string; engine: string }[] } }>('services/info', null);
      row = info.fleet.hosts.find((h) => h.id === host);
      if (row && check(row)) return;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error(`host ${host} never got there: ${JSON.stringify(row)}`);
  }
});
