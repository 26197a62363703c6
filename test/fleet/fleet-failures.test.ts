import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { RpcError } from '../../src/client/index.js';
import { runCli } from '../support/cli.js';
import { DockerFixture } from '../support/docker.js';
import { firstByteAfter, firstSuccessAfter, completeAfterResume, logFleetOnFailure, LONG_EXEC, longExecReference, sha256, within } from '../support/fleet-exec.js';
import { Fleet, type GatewayRun } from '../support/fleet.js';
import { clientsOn } from '../support/nats-connz.js';
import { until } from '../support/wait.js';

/**
 * The fleet when its parts fail (issue 24 "Failures"), with real processes: three NATS
 * nodes, agents a and b beside the test engine, gateways. Each process is given one
 * first node (it learns the others from the server), so a kill hits the path it means to.
 * Times are logged as `[fleet] ...`; the waits for them are bounded, never asserted.
 */
describe('a fleet when NATS nodes, an agent or a gateway fail', () => {
  const docker = new DockerFixture();
  let fleet: Fleet;
  let gateway1: GatewayRun;
  let gateway2: GatewayRun;
  let name: string;
  let direct: string;
  let url: (node: number) => string[];

  beforeAll(async () => {
    fleet = await Fleet.start({ hosts: ['a', 'b'], nodes: 3 });
    url = (node) => [fleet.cluster.urls[node - 1]!];
    // gateway 1 on node 1, agent a on node 2, gateway 2 and agent b on node 3.
    await Promise.all([fleet.agent('a', { urls: url(2) }), fleet.agent('b', { urls: url(3) })]);
    [gateway1, gateway2] = await Promise.all([fleet.gateway({ urls: url(1), waitHosts: ['a', 'b'] }), fleet.gateway({ urls: url(3), waitHosts: ['a', 'b'] })]);
    ({ name, direct } = await longExecReference(docker));
  }, 90_000);

  beforeEach(() => logFleetOnFailure(fleet));

  afterAll(async () => {
    await fleet?.stop();
    await docker.cleanup();
  });

  /**
   * Starts the exec through `gateway`, and kills `node` once a megabyte of it has arrived;
   * `strict`: the first call after the kill must succeed.
   */
  async function killNodeDuringExec(gateway: GatewayRun, node: number, what: string, strict: boolean): Promise<void> {
    const run = runCli(['exec', '--url', gateway.wsUrl, `a/${name}`, '--', 'sh', '-c', LONG_EXEC], { stdin: 'ignore' });
    await until(() => run.stdout.length > 1 << 20 || run.child.exitCode !== null, 'a megabyte of output', 30_000);
    expect(run.child.exitCode, `the exec still runs when the node is killed: ${run.stderr}`).toBeNull();
    const atKill = run.stdout.length;
    const client = await fleet.client(gateway);
    const killedAt = Date.now();
    await fleet.cluster.kill(node, 'SIGKILL');
    try {
      const failover = await firstSuccessAfter(client, `a/${name}`, killedAt, strict);
      await completeAfterResume(run, direct, what);
      const failed = failover.failures.length > 0 ? ` after ${failover.failures.length} call(s) ended UNAVAILABLE (${failover.failures[0]})` : ', the first call after the kill';
      console.log(`[fleet] ${what}: the exec resumed and completed byte-exact with exit 7 after ${Date.now() - killedAt} ms (${atKill} of ${direct.length} bytes had arrived at the kill); failover (kill -> first byte of a new call) ${failover.ms} ms${failed}`);
    } finally {
      await fleet.cluster.start(node);
    }
  }

  it("a NATS node killed with SIGKILL mid-exec (the gateway's node): the exec resumes, byte-exact with exit 7; new calls work at once", async () => {
    expect(await clientsOn(fleet.cluster, 1)).toContain('callwire-gateway');
    expect(await clientsOn(fleet.cluster, 1)).not.toContain('callwire-agent-a');
    expect(await clientsOn(fleet.cluster, 2)).toContain('callwire-agent-a');
    await killNodeDuringExec(gateway1, 1, "the gateway's NATS node killed", true);
  }, 120_000);

  it("a NATS node killed with SIGKILL mid-exec (the agent's node): the exec resumes, byte-exact with exit 7; new calls may fail UNAVAILABLE until the agent is back", async () => {
    // Gateway 2 was given node 3 only and node 3 never died: it is there still.
    expect(await clientsOn(fleet.cluster, 2)).toContain('callwire-agent-a');
    expect(await clientsOn(fleet.cluster, 3)).toContain('callwire-gateway');
    // What the gateway sent before the agent was back on NATS is lost, and a call whose
    // request it was cannot be known unstarted: it ends UNAVAILABLE, and the next ones work.
    await killNodeDuringExec(gateway2, 2, "the agent's NATS node killed", false);
  }, 120_000);

  it('an agent killed with SIGKILL mid-exec: the exec ends UNAVAILABLE naming the host, new calls fail fast, and it is routable again once restarted', async () => {
    // The test before restarted agent a's NATS node; until a is back on it, a call to a may
    // end UNAVAILABLE (as that test says), and this one's exec must begin on a working host.
    await firstSuccessAfter(await fleet.client(gateway1), `a/${name}`, Date.now(), false);
    const run = runCli(['exec', '--url', gateway1.wsUrl, `a/${name}`, '--', 'sh', '-c', LONG_EXEC], { stdin: 'ignore' });
    await until(() => run.stdout.length > 1 << 20 || run.child.exitCode !== null, 'a megabyte of output', 30_000);
    expect(run.child.exitCode, `the exec still runs when the agent is killed: ${run.stderr}`).toBeNull();
    const killedAt = Date.now();
    fleet.agents.get('a')!.child.kill('SIGKILL');
    const { code } = await within(run.exited, 15_000, 'the exec on the killed agent ending');
    const endedMs = Date.now() - killedAt;
    expect(code, run.stderr).toBe(123);
    expect(run.stderr).toMatch(/host a\b.*\(UNAVAILABLE\)/);
    expect(direct.startsWith(run.stdout)).toBe(true);
    const downMs = await fleet.hostState(gateway1, 'a', 'down');

    const askedAt = Date.now();
    const error = await within(firstByteAfter(await fleet.client(gateway1), `a/${name}`, askedAt).catch((e: unknown) => e), 10_000, 'a call to the dead host');
    const refusedMs = Date.now() - askedAt;
    expect(error).toBeInstanceOf(RpcError);
    expect((error as RpcError).code).toBe('UNAVAILABLE');
    expect((error as RpcError).message).toMatch(/host a is down/);
    const refused = runCli(['exec', '--url', gateway1.wsUrl, `a/${name}`, '--', 'true'], { stdin: 'ignore' });
    expect((await within(refused.exited, 10_000, 'the CLI calling the dead host')).code).toBe(123);
    expect(refused.stderr).toMatch(/host a is down.*\(UNAVAILABLE\)/);
    // The other host is unharmed.
    expect(await within(firstByteAfter(await fleet.client(gateway1), `b/${name}`, Date.now()), 15_000, 'a call to host b')).toBeGreaterThanOrEqual(0);

    const restartedAt = Date.now();
    await fleet.agent('a', { urls: url(2) });
    const client = await fleet.client(gateway1);
    let routableMs = -1;
    while (Date.now() - restartedAt < 15_000) {
      const ok = await within(firstByteAfter(client, `a/${name}`, restartedAt), 5000, 'a call to the restarted agent').catch(() => -1);
      if (ok >= 0) {
        routableMs = Date.now() - restartedAt;
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(routableMs, 'the restarted agent is routable within 15 s').toBeGreaterThanOrEqual(0);
    console.log(`[fleet] an agent killed mid-exec: the exec ended UNAVAILABLE after ${endedMs} ms (host down after ${endedMs + downMs} ms); a new call to it was refused in ${refusedMs} ms: ${refused.stderr.trim()}; restarted, routable after ${routableMs} ms (agent start included)`);
  }, 90_000);

  it('two gateways at once: an exec through each at the same time, both byte-exact', async () => {
    const runs = [gateway1, gateway2].map((g) => runCli(['exec', '--url', g.wsUrl, `a/${name}`, '--', 'sh', '-c', LONG_EXEC], { stdin: 'ignore' }));
    await until(() => runs.every((r) => r.stdout.length > 0), 'both execs streaming', 30_000);
    expect(runs.map((r) => r.child.exitCode), 'both run at once').toEqual([null, null]);
    for (const [i, run] of runs.entries()) {
      expect((await within(run.exited, 60_000, `the exec through gateway ${i + 1}`)).code).toBe(7);
      expect(run.stdout.length).toBe(direct.length);
      expect(sha256(run.stdout)).toBe(sha256(direct));
    }
  }, 90_000);
});
