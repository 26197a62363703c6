import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, type CliRun } from '../support/cli.js';
import { DockerFixture, RUN_LABEL, TEST_IMAGE } from '../support/docker.js';
import { Fleet, type GatewayRun } from '../support/fleet.js';
import { within } from '../support/fleet-exec.js';

/**
 * Issue 47 item 2 (docs/security.md "Fan-out", a host that is down): a fan-out never calls a
 * target on a down host a success. Two agents, a and b, serve the test engine, so the
 * container `demo-…` is a target on both; b's agent is killed, and the gateway, which still
 * holds b's names, reports b's `demo-…` as not run with why, through the real CLI.
 */
describe('a fan-out over a fleet with a host down', () => {
  const docker = new DockerFixture();
  const demo = `demo-${docker.runId.slice(0, 8)}`;
  let fleet: Fleet;
  let gateway: GatewayRun;

  const exec = (args: string[]): CliRun => runCli(['exec', '--url', gateway.wsUrl, ...args], { stdin: 'ignore' });

  beforeAll(async () => {
    const created = await docker.engine.docker.createContainer({ Image: TEST_IMAGE, name: demo, Cmd: ['sleep', '1000000'], Labels: { [RUN_LABEL]: docker.runId }, HostConfig: { NetworkMode: 'none' } });
    await created.start();
    fleet = await Fleet.start({ hosts: ['a', 'b'], nodes: 1 });
    await Promise.all([fleet.agent('a'), fleet.agent('b')]);
    gateway = await fleet.gateway({ waitHosts: ['a', 'b'] });
    // Both hosts' tables name it from their next beat.
    for (let tries = 0; ; tries++) {
      const dry = exec(['--targets', `*/${demo}`, '--dry-run']);
      await dry.exited;
      if (dry.stdout === `a/${demo}\t-\nb/${demo}\t-\n` || tries > 60) break;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    fleet.agents.get('b')!.child.kill('SIGKILL');
    await fleet.hostState(gateway, 'b', 'down', 30_000);
  }, 120_000);

  afterAll(async () => {
    await fleet?.stop();
    await docker.cleanup();
  });

  it("'*/NAME' runs on a and exits 123, its summary naming b's known container as not run, with why", async () => {
    const run = exec(['--targets', `*/${demo}`, '--', 'echo', 'ran']);
    expect((await within(run.exited, 30_000, 'the fan-out')).code).toBe(123);
    expect(run.stdout).toBe(`a/${demo}: ran\n`);
    const summary = run.lines.filter((l) => l.stream === 'stderr').at(-1)?.line ?? '';
    expect(summary).toMatch(new RegExp(`^2 targets: 1 exit 0, 1 not run \\(b/${demo}: host b is down: no heartbeat for \\d+ s\\)$`));
    const json = exec(['--json', '--targets', `*/${demo}`, '--', 'true']);
    expect((await within(json.exited, 30_000, 'the --json fan-out')).code).toBe(123);
    expect(JSON.parse(json.stdout.trim().split('\n').at(-1)!)).toMatchObject({ targets: 2, exit_code: 123, not_run: 1, failed: [{ target: `b/${demo}`, error: { code: 'UNAVAILABLE' } }] });
  }, 60_000);

  it("'b/NAME' says b is down, not that no running container matches", async () => {
    const run = exec(['--targets', `b/${demo}`, '--', 'true']);
    expect((await within(run.exited, 30_000, 'the fan-out')).code).toBe(123);
    expect(run.stderr).not.toMatch(/no running container matches/);
    expect(run.stderr).toMatch(new RegExp(`1 target: 1 not run \\(b/${demo}: host b is down`));
  }, 60_000);

  it("--dry-run 'b/*' says the pattern met a down host", async () => {
    const run = exec(['--targets', 'b/*', '--dry-run']);
    expect((await within(run.exited, 30_000, 'the dry run')).code).toBe(0);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(new RegExp(`callwire: b/${demo}: would not run: host b is down: no heartbeat for \\d+ s`));
  }, 60_000);
});
