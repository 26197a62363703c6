import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { RpcError } from '../../src/client/index.js';
import { runCli, type CliRun } from '../support/cli.js';
import { DockerFixture } from '../support/docker.js';
import { firstByteAfter, firstSuccessAfter, completeAfterResume, logFleetOnFailure, LONG_EXEC, longExecReference, within } from '../support/fleet-exec.js';
import { Fleet, type GatewayRun } from '../support/fleet.js';
import { netnsUnavailable } from '../support/netns-link.js';
import { NetnsHost } from '../support/netns-host.js';
import { sleep, until } from '../support/wait.js';

const unavailable = netnsUnavailable();

/**
 * A fleet host in a network namespace of its own (issue 24 "Tests"): agent a runs in the
 * namespace and reaches the NATS nodes only across a veth link (they listen on its root
 * side's address); its engine is the test engine, whose unix socket no network namespace
 * hides. Agent b, the gateway and the nodes are in the root namespace. Cutting the link
 * loses segments as a pulled cable does. Times are logged as `[fleet] ...`, never asserted.
 */
describe.skipIf(unavailable)(`a fleet host behind a link that is cut${unavailable ? ` (skipped: ${unavailable})` : ''}`, () => {
  const docker = new DockerFixture();
  const host = new NetnsHost();
  let fleet: Fleet;
  let gateway: GatewayRun;
  let name: string;
  let direct: string;

  beforeAll(async () => {
    host.create();
    fleet = await Fleet.start({ hosts: ['a', 'b'], nodes: 3, addresses: [host.rootAddress, host.rootAddress, host.rootAddress] });
    await Promise.all([fleet.agent('a', { prefix: host.prefix }), fleet.agent('b')]);
    gateway = await fleet.gateway({ waitHosts: ['a', 'b'] });
    ({ name, direct } = await longExecReference(docker));
  }, 90_000);

  beforeEach(() => logFleetOnFailure(fleet));

  afterAll(async () => {
    await fleet?.stop();
    host.remove();
    await docker.cleanup();
  });

  /** The exec through the gateway to host a, once a megabyte of it has arrived. */
  async function execStreaming(): Promise<CliRun> {
    const run = runCli(['exec', '--url', gateway.wsUrl, `a/${name}`, '--', 'sh', '-c', LONG_EXEC], { stdin: 'ignore' });
    await until(() => run.stdout.length > 1 << 20 || run.child.exitCode !== null, 'a megabyte of output', 30_000);
    expect(run.child.exitCode, 'the exec still runs when the link is cut').toBeNull();
    return run;
  }

  it('the link cut for 2 s mid-exec (under the down threshold), then restored: the exec resumes and completes byte-exact with exit 7; the host is routable after', async () => {
    const run = await execStreaming();
    const atCut = run.stdout.length;
    host.cut();
    try {
      // Under the 3 missed beats that mark a host down: the link, not the host, failed.
      await sleep(2000);
    } finally {
      host.restore();
    }
    const restoredAt = Date.now();
    await completeAfterResume(run, direct, 'the exec across a cut link');
    const endedMs = Date.now() - restoredAt;
    const after = await firstSuccessAfter(await fleet.client(gateway), `a/${name}`, restoredAt, false);
    console.log(`[fleet] the link cut for 2 s mid-exec (${atCut} of ${direct.length} bytes had arrived): the exec resumed and completed byte-exact with exit 7 ${endedMs} ms after the restore; a call succeeded ${after.ms} ms after the restore${after.failures.length > 0 ? ` (${after.failures.length} ended UNAVAILABLE first: ${after.failures[0]})` : ''}`);
  }, 90_000);

  it('the link cut past the down threshold: the host shows down, its exec and new calls end UNAVAILABLE naming it; restored, it is up and routable again', async () => {
    const run = await execStreaming();
    const cutAt = Date.now();
    host.cut();
    let restoredAt = 0;
    try {
      const downMs = await fleet.hostState(gateway, 'a', 'down', 15_000);
      const { code } = await within(run.exited, 15_000, 'the exec on the cut host ending');
      const endedMs = Date.now() - cutAt;
      expect(code, run.stderr).toBe(123);
      expect(run.stderr).toMatch(/host a\b.*\(UNAVAILABLE\)/);
      expect(direct.startsWith(run.stdout)).toBe(true);

      const client = await fleet.client(gateway);
      const askedAt = Date.now();
      const refused = await within(firstByteAfter(client, `a/${name}`, askedAt).catch((e: unknown) => e), 10_000, 'a call to the cut host');
      const refusedMs = Date.now() - askedAt;
      expect(refused).toBeInstanceOf(RpcError);
      expect((refused as RpcError).code).toBe('UNAVAILABLE');
      expect((refused as RpcError).message).toMatch(/host a is down/);
      // The host in the root namespace is unharmed.
      await within(firstByteAfter(client, `b/${name}`, Date.now()), 15_000, 'a call to host b');

      host.restore();
      restoredAt = Date.now();
      const upMs = await fleet.hostState(gateway, 'a', 'up', 30_000);
      const after = await firstSuccessAfter(client, `a/${name}`, restoredAt, false, 30_000);
      console.log(`[fleet] the link cut past the down threshold: host a down ${downMs} ms after the cut, its exec ended UNAVAILABLE ${endedMs} ms after it (${run.stderr.trim()}), a new call refused in ${refusedMs} ms; restored: up after ${upMs} ms, a call succeeded ${after.ms} ms after the restore${after.failures.length > 0 ? ` (${after.failures.length} ended UNAVAILABLE first)` : ''}`);
    } finally {
      if (restoredAt === 0) host.restore();
    }
  }, 120_000);
});
