import { hostname } from 'node:os';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Beat } from '../../src/fleet/beat.js';
import { beatOf } from '../../src/fleet/subjects.js';
import { runCli } from '../support/cli.js';
import { DockerFixture } from '../support/docker.js';
import { logFleetOnFailure, within } from '../support/fleet-exec.js';
import { Fleet, type GatewayRun } from '../support/fleet.js';
import { sleep, until } from '../support/wait.js';

/**
 * One agent per host id (issue 47, item 6): `npm run fleet` after the "By hand" agent, or any
 * second `callwire agent --host-id a`, had both agents take a's calls, and every exec to a
 * failed. The real CLI's agents and gateway on a NATS cluster of the test's own; what each
 * agent beats is heard as the gateway hears it, so the test knows who started when. A
 * second agent refuses to serve, naming the first; the first keeps serving; a restarted
 * agent (the first gone) is not held back; a serving agent gives way only to one that
 * started first; and a gateway that hears two agents of one host says so.
 */
describe('one agent per host id', () => {
  const docker = new DockerFixture();
  let name = '';
  let fleet: Fleet;
  let gateway: GatewayRun;
  let listener: NatsConnection;
  /** Each agent's startedAt by its pid, from its beats. */
  const startedAt = new Map<number, number>();
  /** When each agent's first beat arrived, by its pid. */
  const firstBeatAt = new Map<number, number>();

  beforeAll(async () => {
    name = (await docker.engine.docker.getContainer(await docker.container()).inspect()).Name.replace(/^\//, '');
    fleet = await Fleet.start({ hosts: ['a', 'c'], nodes: 1 });
    const { user, pass } = fleet.cluster.users['gateway']!;
    listener = await connect({ servers: fleet.cluster.urls, user, pass });
    listener.subscribe('callwire.host.*.beat', {
      callback: (error, msg) => {
        if (error || msg.data.byteLength > 4096) return;
        const beat = msg.json<Beat>();
        if (beat.pid === undefined) return;
        startedAt.set(beat.pid, beat.startedAt);
        if (!firstBeatAt.has(beat.pid)) firstBeatAt.set(beat.pid, Date.now());
      },
    });
    await listener.flush();
    await fleet.agent('a');
    gateway = await fleet.gateway({ waitHosts: ['a'] });
  }, 90_000);

  beforeEach(() => logFleetOnFailure(fleet));

  afterAll(async () => {
    await listener?.close();
    await fleet?.stop();
    await docker.cleanup();
  });

  /** `exec a/NAME -- echo …` through the gateway: it must run on a's engine. */
  async function execOnA(): Promise<void> {
    const run = runCli(['exec', '--url', gateway.wsUrl, `a/${name}`, '--', 'echo', 'ran-on-a'], { stdin: 'ignore' });
    expect((await within(run.exited, 30_000, 'exec a/NAME')).code, run.stderr).toBe(0);
    expect(run.stdout).toBe('ran-on-a\n');
  }

  const iso = (pid: number): string => new Date(startedAt.get(pid)!).toISOString();

  it('a second agent of an id already up does not serve: it exits 2 naming the first (its start, pid and machine); the first keeps the host', async () => {
    const first = fleet.agents.get('a')!;
    await until(() => startedAt.has(first.child.pid!), 'a beat of the first agent', 5000);
    const started = Date.now();
    const second = fleet.spawnAgent('a');
    const { code } = await within(second.exited, 30_000, 'the second agent refusing');
    console.log(`[one agent per host] the second agent refused after ${Date.now() - started} ms`);
    expect(code, second.stdout + second.stderr).toBe(2);
    expect(second.stderr).toContain(`Error: host id a is taken: another agent serves it (started ${iso(first.child.pid!)}, pid ${first.child.pid} on ${hostname()}, as its heartbeat says); stop that one first, or give this one another --host-id`);
    expect(second.stdout).not.toMatch(/serving/);
    expect(first.child.exitCode).toBeNull();
    await execOnA();
    expect(gateway.run.stderr).not.toMatch(/host a restarted/);
  }, 60_000);

  it('the first agent killed, an agent started at once serves within a few seconds, and the host with it', async () => {
    const first = fleet.agents.get('a')!;
    first.child.kill('SIGKILL');
    await first.exited;
    const started = Date.now();
    const again = await fleet.agent('a');
    await until(() => firstBeatAt.has(again.child.pid!), 'a beat of the restarted agent', 5000);
    // From its start (once Node has loaded it) to its first beat: its NATS connection, its 1.5 s wait for another's beats, its engine's list.
    const heldMs = firstBeatAt.get(again.child.pid!)! - startedAt.get(again.child.pid!)!;
    console.log(`[one agent per host] restarted with the first gone: serving after ${Date.now() - started} ms, its first beat ${heldMs} ms after it started`);
    expect(heldMs, 'its first beat within its 1.5 s wait and a few seconds of start').toBeLessThan(5000);
    expect(again.stderr).not.toMatch(/taken/);
    await fleet.hostState(gateway, 'a', 'up');
    await execOnA();
  }, 60_000);

  /** Beats of host `host` as another agent would send them, with its `startedAt`, pid and machine, every 300 ms until stopped. */
  async function rival(host: string, self: { startedAt: number; pid: number; hostname: string }): Promise<() => Promise<void>> {
    const { user, pass } = fleet.cluster.users[host]!;
    const nc = await connect({ servers: fleet.cluster.urls, user, pass });
    const beat = (): void => nc.publish(beatOf(host), JSON.stringify({ ...self, version: 0, engine: 'up' }));
    beat();
    const timer = setInterval(beat, 300);
    return async () => {
      clearInterval(timer);
      await nc.close();
    };
  }

  it('a serving agent hearing another that started after it keeps the host and says so; hearing one that started before it, it leaves, naming it', async () => {
    const serving = fleet.agents.get('a')!;
    await until(() => startedAt.has(serving.child.pid!), 'a beat of the serving agent', 5000);
    const own = startedAt.get(serving.child.pid!)!;
    const later = await rival('a', { startedAt: own + 1000, pid: 424242, hostname: 'later-box' });
    await serving.waitFor(/another agent beats as this host; this one started first and keeps the host id[^\n]*pid 424242 on later-box/, 'stderr', 10_000);
    await later();
    expect(serving.child.exitCode).toBeNull();
    // The gateway took the rival's beats for restarts of a: its next beat of the serving agent is one more, then a is steady.
    await sleep(1500);
    await execOnA();

    const earlier = await rival('a', { startedAt: own - 1000, pid: 434343, hostname: 'earlier-box' });
    try {
      const { code } = await within(serving.exited, 10_000, 'the serving agent giving way');
      expect(code).toBe(2);
      expect(serving.stderr).toContain(`Error: host id a is taken: another agent that started first serves it too (started ${new Date(own - 1000).toISOString()}, pid 434343 on earlier-box, as its heartbeat says); this one leaves the fleet`);
    } finally {
      await earlier();
    }
  }, 60_000);

  it('a gateway that hears two agents of one host (restarts going back and forth) says so, naming both', async () => {
    const one = await rival('c', { startedAt: 1_700_000_000_000, pid: 1111, hostname: 'box-one' });
    await sleep(500);
    const two = await rival('c', { startedAt: 1_700_000_100_000, pid: 2222, hostname: 'box-two' });
    try {
      const said = (): string | undefined => gateway.run.stderr.split('\n').find((l) => l.includes('two agents beat as one host') && l.includes('"host":"c"'));
      await until(() => said() !== undefined, 'the gateway saying so', 10_000);
      const line = said()!;
      console.log(`[one agent per host] the gateway: ${line}`);
      expect(line).toContain('pid 1111 on box-one');
      expect(line).toContain('pid 2222 on box-two');
    } finally {
      await Promise.all([one(), two()]);
    }
  }, 30_000);
});
