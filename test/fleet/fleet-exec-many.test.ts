import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DockerFixture, RUN_LABEL, TEST_IMAGE } from '../support/docker.js';
import { Fleet, type GatewayRun } from '../support/fleet.js';
import { until } from '../support/wait.js';

type Line = Record<string, unknown>;
const json = (text: string): Line[] =>
  text
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Line);

/**
 * `docker/container/exec-many` on a fleet gateway (issue 35): it runs at the gateway,
 * over every host, each target `HOST/NAME` an exec the gateway routes as the caller's
 * call, each audited with the host it went to. Two agents, a and b, serve the same
 * test engine, so each container is a target on both hosts.
 */
describe('fan-out exec at a fleet gateway', () => {
  const docker = new DockerFixture();
  const tag = docker.runId.slice(0, 8);
  const names = [0, 1].map((n) => `fw-${tag}-${n}`);
  let fleet: Fleet;
  let gateway: GatewayRun;
  let dir = '';
  let audit = '';

  beforeAll(async () => {
    for (const [n, name] of names.entries()) {
      const created = await docker.engine.docker.createContainer({
        name,
        Image: TEST_IMAGE,
        Cmd: ['sleep', '1000000'],
        Env: [`N=${n === 1 ? 4 : 0}`],
        Labels: { [RUN_LABEL]: docker.runId, fanweb: tag },
        HostConfig: { NetworkMode: 'none' },
      });
      await created.start();
    }
    dir = mkdtempSync(join(tmpdir(), 'callwire-fw-fleet-'));
    audit = join(dir, 'audit.log');
    fleet = await Fleet.start({ hosts: ['a', 'b'], nodes: 1 });
    await Promise.all([fleet.agent('a'), fleet.agent('b')]);
    gateway = await fleet.gateway({ waitHosts: ['a', 'b'], extraArgs: ['--audit', audit] });
  }, 90_000);

  afterAll(async () => {
    await fleet?.stop();
    await docker.cleanup();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('one POST runs the command in every HOST/NAME the label selects, each line tagged, the largest exit code last', async () => {
    const base = gateway.wsUrl.replace('ws://', 'http://').replace(/\/callwire$/, '');
    const response = await fetch(`${base}/call/docker/container/exec-many`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ labels: [`fanweb=${tag}`], cmd: ['sh', '-c', 'echo "$N"; exit $N'] }),
    });
    expect(response.headers.get('x-callwire-exit-code')).toBeNull(); // a trailer, not a header
    const lines = json(await response.text());
    const targets = ['a', 'b'].flatMap((host) => names.map((name) => `${host}/${name}`));
    expect(lines[0]).toEqual({ targets, owners: Object.fromEntries(targets.map((t) => [t, null])), othersLeftOut: 0 });
    const frames = lines.filter((l) => 'frame' in l).map((l) => [l['target'], (l['frame'] as { text: string }).text]);
    expect(frames.sort()).toEqual(targets.map((t) => [t, t.endsWith('-1') ? '4\n' : '0\n']).sort());
    const summary = lines.find((l) => 'summary' in l) as { summary: { text: string } } | undefined;
    expect(summary, JSON.stringify(summary)).toMatchObject({ summary: { targets: 4, exitCode: 4, text: `4 targets: 2 exit 0, 2 exit 4 (${['a', 'b'].map((h) => `${h}/${names[1]}`).sort().join(', ')})` } });
    expect(lines[lines.length - 1]).toMatchObject({ kind: 'callwire.terminal', exit_code: 4 });

    // The gateway audits each target as its own exec, with the host it routed it to.
    const execs = (): Line[] => json(readFileSync(audit, 'utf8')).filter((l) => l['operation'] === 'docker/container/exec' && JSON.stringify(l['cmd']).includes('echo \\"$N\\"'));
    await until(() => execs().length === 4, 'four exec lines');
    expect(execs().map((l) => [l['host'], l['container'], l['exit_code']]).sort()).toEqual(targets.map((t) => [t.split('/')[0], t, t.endsWith('-1') ? 4 : 0]).sort());
  }, 60_000);
});
