import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, type CliRun } from '../support/cli.js';
import { DockerFixture, RUN_LABEL, TEST_IMAGE } from '../support/docker.js';
import { Fleet, type GatewayRun } from '../support/fleet.js';
import { within } from '../support/fleet-exec.js';
import { PrivateEngine, privateEngineMissing } from '../support/private-engine.js';
import { parseResultRecord } from '../support/result-record-schema.js';
import { skipTitle } from '../support/skip.js';

/**
 * `callwire exec -l role=web …` over a fleet (docs/cli.md "Many containers"): hosts a and b,
 * each an agent in front of a Docker engine of its own (two real engines, started here), each
 * engine with three `role=web` containers and one `role=db`; the label alone selects the six.
 * Both engines are this file's, not the shared one, where another worktree's run of this file
 * may hold `role=web` containers of its own. Each container's N (its environment, which an
 * exec inherits) is the exit code the command takes: a2 exits 3, b2 exits 5, the others 0.
 */
describe.skipIf(privateEngineMissing !== undefined)(skipTitle('fan-out exec over a fleet of two hosts on two engines', privateEngineMissing), () => {
  const engines = { a: new PrivateEngine(), b: new PrivateEngine() };
  const dockers = { a: new DockerFixture(engines.a.dockerHost), b: new DockerFixture(engines.b.dockerHost) };
  const prefix = `fancli-${dockers.a.runId.slice(0, 8)}`;
  const exits: Record<string, number> = { a1: 0, a2: 3, a3: 0, b1: 0, b2: 5, b3: 0 };
  const targets = Object.keys(exits).map((k) => `${k[0]}/${prefix}-${k}`);
  const select = ['-l', 'role=web'];
  const ids = new Map<string, string>();
  const hostOf = (key: string): 'a' | 'b' => (key[0] === 'a' ? 'a' : 'b');
  let fleet: Fleet;
  let gateway: GatewayRun;

  const exec = (args: string[], stdin: 'pipe' | 'ignore' = 'ignore'): CliRun => runCli(['exec', '--url', gateway.wsUrl, ...select, ...args], { stdin });

  beforeAll(async () => {
    const [started] = await Promise.all([Fleet.start({ hosts: ['a', 'b'], nodes: 1 }), engines.a.up(), engines.b.up()]);
    fleet = started;
    await Promise.all([fleet.agent('a', { env: { DOCKER_HOST: engines.a.dockerHost } }), fleet.agent('b', { env: { DOCKER_HOST: engines.b.dockerHost } })]);
    gateway = await fleet.gateway({ waitHosts: ['a', 'b'] });
    const create = async (host: 'a' | 'b', name: string, role: string, n: number): Promise<string> => {
      const docker = dockers[host];
      const created = await docker.engine.docker.createContainer({
        Image: TEST_IMAGE,
        name,
        Cmd: ['sleep', '1000000'],
        Env: [`N=${n}`],
        Labels: { [RUN_LABEL]: docker.runId, role },
        HostConfig: { NetworkMode: 'none' },
      });
      await created.start();
      return created.id;
    };
    await Promise.all([
      ...Object.entries(exits).map(async ([key, n]) => ids.set(key, await create(hostOf(key), `${prefix}-${key}`, 'web', n))),
      // Running, beside the web ones, and not selected: the label is what selects.
      create('a', `${prefix}-db`, 'db', 0),
      create('b', `${prefix}-db`, 'db', 0),
    ]);
    // A container becomes routable from its host's next heartbeat.
    for (let tries = 0; ; tries++) {
      const dry = runCli(['exec', '--url', gateway.wsUrl, ...select, '--dry-run'], { stdin: 'ignore' });
      await dry.exited;
      if (dry.stdout.trim().split('\n').length === 6 || tries > 40) break;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }, 120_000);

  afterAll(async () => {
    await fleet?.stop();
    for (const host of ['a', 'b'] as const) {
      await dockers[host].cleanup().catch(() => undefined);
      engines[host].down();
    }
  });

  it('--dry-run lists the six targets as HOST/NAME, each with its owner (- for none of callwire\'s), and runs nothing', async () => {
    const run = exec(['--dry-run', '--', 'touch', '/tmp/ran']);
    expect((await run.exited).code).toBe(0);
    expect(run.stdout.trim().split('\n')).toEqual([...targets].sort().map((t) => `${t}\t-`));
  }, 60_000);

  it('every line prefixed with its target, stdout and stderr apart, the largest exit code as ours, a summary naming the failing ones', async () => {
    const run = exec(['--', 'sh', '-c', 'hostname; echo "err-$N" >&2; printf "no newline $N"; exit $N']);
    expect((await within(run.exited, 60_000, 'the fan-out')).code).toBe(5);
    const out = run.lines.filter((l) => l.stream === 'stdout').map((l) => l.line);
    const err = run.lines.filter((l) => l.stream === 'stderr').map((l) => l.line);
    for (const [key, n] of Object.entries(exits)) {
      const target = `${key[0]}/${prefix}-${key}`;
      // A container's hostname is its short id.
      expect(out).toContain(`${target}: ${ids.get(key)!.slice(0, 12)}`);
      expect(out).toContain(`${target}: no newline ${n}`);
      expect(err).toContain(`${target}: err-${n}`);
    }
    expect(out).toHaveLength(12);
    expect(err.at(-1)).toBe(`6 targets: 4 exit 0, 1 exit 3 (a/${prefix}-a2), 1 exit 5 (b/${prefix}-b2)`);
  }, 60_000);

  it('--group groups identical outputs with their targets, at the end', async () => {
    const run = exec(['--group', '--', 'sh', '-c', 'echo "n is $N"; exit $N']);
    expect((await within(run.exited, 60_000, 'the grouped fan-out')).code).toBe(5);
    // dshbak -c's layout: a rule as long as the target list (16 to 80), the list, a rule, the output.
    const group = (names: string[], output: string): string => {
      const rule = '-'.repeat(Math.min(Math.max(16, names.join(',').length), 80));
      return `${rule}\n${names.join(',')}\n${rule}\n${output}`;
    };
    const zero = targets.filter((t) => exits[t.slice(-2)] === 0).sort();
    expect(run.stdout).toBe(group(zero, 'n is 0\n') + group([`a/${prefix}-a2`], 'n is 3\n') + group([`b/${prefix}-b2`], 'n is 5\n'));
    expect(run.stdout.match(/n is 0/g)).toHaveLength(1);
  }, 60_000);

  it('--json: one exec envelope per target as it ends, with its target, then one summary line', async () => {
    const run = exec(['--json', '--', 'sh', '-c', 'echo "n=$N"; exit $N']);
    expect((await within(run.exited, 60_000, 'the json fan-out')).code).toBe(5);
    const lines = run.stdout.trim().split('\n');
    expect(lines).toHaveLength(7);
    const records = lines.slice(0, 6).map((line) => parseResultRecord(line));
    expect(records.map((r) => r['target']).sort()).toEqual([...targets].sort());
    for (const record of records) {
      const n = exits[String(record['target']).slice(-2)]!;
      expect(record['exec']).toMatchObject({ exit_code: n, stdout: `n=${n}\n` });
    }
    const summary = JSON.parse(lines[6]!) as Record<string, unknown>;
    expect(summary).toMatchObject({ kind: 'callwire.fan-out', targets: 6, exit_code: 5, exit_codes: { '0': 4, '3': 1, '5': 1 }, not_run: 0 });
  }, 60_000);

  it('-t with more than one target, and more targets than --max-targets, are refused before anything runs', async () => {
    const tty = exec(['-t', '--', 'touch', '/tmp/fancli-ran']);
    expect((await tty.exited).code).toBe(121);
    expect(tty.stderr).toMatch(/-t runs one command on one terminal; the selection matches 6 containers/);
    const many = exec(['--max-targets', '5', '--', 'touch', '/tmp/fancli-ran']);
    expect((await many.exited).code).toBe(121);
    expect(many.stderr).toMatch(/matches 6 containers, more than --max-targets 5/);
    const check = exec(['--', 'sh', '-c', 'test ! -e /tmp/fancli-ran']);
    expect((await check.exited).code).toBe(0);
  }, 60_000);

  it('-i sends the same 10 MB to every target: each sha256sum equal to ours', async () => {
    const data = randomBytes(10 * 1024 * 1024);
    const expected = createHash('sha256').update(data).digest('hex');
    const run = exec(['-i', '--', 'sha256sum'], 'pipe');
    run.child.stdin.end(data);
    expect((await within(run.exited, 120_000, 'the stdin fan-out')).code).toBe(0);
    const sums = run.lines.filter((l) => l.stream === 'stdout').map((l) => l.line);
    expect(sums.sort()).toEqual(targets.map((t) => `${t}: ${expected}  -`).sort());
  }, 180_000);

  it('Ctrl-C aborts every target and leaves no process of theirs in any container', async () => {
    const run = exec(['--', 'sh', '-c', 'echo started; exec sleep 1000']);
    for (const target of targets) await run.waitFor(new RegExp(`${target}: started`), 'stdout', 30_000);
    run.child.kill('SIGINT');
    expect((await within(run.exited, 30_000, 'the cancelled fan-out')).code).toBe(130);
    // The CLI exits once it has sent every abort; each reaches its engine through the gateway and an agent a moment later.
    for (const [key, id] of ids) await expect.poll(() => dockers[hostOf(key)].processes(id)).not.toContain('sleep 1000');
  }, 60_000);

  // Last: it kills host b's agent.
  it('a host killed mid-run: its targets not run (123) naming the host, the others complete', async () => {
    const run = exec(['--', 'sh', '-c', 'echo started; sleep 12; echo done']);
    for (const target of targets) await run.waitFor(new RegExp(`${target}: started`), 'stdout', 30_000);
    fleet.agents.get('b')!.child.kill('SIGKILL');
    expect((await within(run.exited, 60_000, 'the fan-out with a host down')).code).toBe(123);
    for (const target of targets.filter((t) => t.startsWith('a/'))) expect(run.stdout).toContain(`${target}: done`);
    const summary = run.lines.filter((l) => l.stream === 'stderr').at(-1)?.line ?? '';
    expect(summary).toMatch(/^6 targets: 3 exit 0, 3 not run \(/);
    for (const target of targets.filter((t) => t.startsWith('b/'))) expect(summary).toMatch(new RegExp(`${target}: [^;]*host b`));
  }, 90_000);
});
