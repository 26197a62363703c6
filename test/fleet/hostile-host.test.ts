import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { RpcError } from '../../src/client/index.js';
import { runCli } from '../support/cli.js';
import { DockerFixture, RUN_LABEL, TEST_IMAGE } from '../support/docker.js';
import { logFleetOnFailure, within } from '../support/fleet-exec.js';
import { Fleet, type GatewayRun } from '../support/fleet.js';
import { HostileAgent, type Delivered } from '../support/hostile-agent.js';
import { freePort } from '../support/ports.js';
import { until } from '../support/wait.js';

/**
 * A fleet host gone hostile (issue 31, findings 4 and 8): host b's NATS credentials in
 * the hands of a fake agent that speaks the fleet's messages itself. It announces the
 * names of a's containers (while a is up, while a is down, and a name pinned to a), and
 * it beats but never answers. Host a is a real agent beside the test engine; the gateway
 * is the real CLI with `--pin`. Whatever b does, a's calls are unharmed, and no call
 * meant for a's containers ever reaches b: the fake agent records everything it is sent.
 */
describe('a hostile fleet host (b\'s credentials, a fake agent) against host a', () => {
  const docker = new DockerFixture();
  const run8 = docker.runId.slice(0, 8);
  const open = `hostile-open-${run8}`;
  const pinned = `hostile-pinned-${run8}`;
  const audit = join(tmpdir(), `callwire-hostile-audit-${process.pid}.jsonl`);
  let fleet: Fleet;
  let gateway: GatewayRun;
  let hostile: HostileAgent;

  beforeAll(async () => {
    for (const name of [open, pinned]) {
      const created = await docker.engine.docker.createContainer({ Image: TEST_IMAGE, name, Cmd: ['sleep', '1000000'], Labels: { [RUN_LABEL]: docker.runId }, HostConfig: { NetworkMode: 'none' } });
      await created.start();
    }
    fleet = await Fleet.start({ hosts: ['a', 'b'], nodes: 1 });
    await fleet.agent('a');
    hostile = await HostileAgent.start(fleet.cluster, 'b');
    gateway = await fleet.gateway({ extraArgs: ['--pin', `${pinned}=a`, '--audit', audit, '--fleet-list-deadline', '2'], waitHosts: ['a', 'b'] });
  }, 90_000);

  beforeEach(() => logFleetOnFailure(fleet));

  afterAll(async () => {
    await hostile?.stop();
    await fleet?.stop();
    await docker.cleanup();
    rmSync(audit, { force: true });
  });

  /** Polls a bare-name inspect until it ends as `code` (the gateway has b's latest table): the error, or the answer. */
  async function bareNameIs(name: string, code: string): Promise<unknown> {
    const client = await fleet.client(gateway);
    let last: unknown;
    for (let i = 0; i < 300; i++) {
      last = await client.call('docker/container/inspect', { containerId: name }).catch((e: unknown) => e);
      if ((last instanceof RpcError ? last.code : 'ok') === code) return last;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error(`${name} did not resolve to ${code}: ${String(last)}`);
  }

  it('silence: b beats but never answers; a merged list answers within its per-host deadline, with a\'s rows, and names b unavailable', async () => {
    const client = await fleet.client(gateway);
    for (const [operation, input] of [['docker/container/list', { all: true }], ['docker/image/list', {}]] as const) {
      const started = Date.now();
      const list = await within(client.call<{ containers?: { host: string; names: string[] }[]; images?: { host: string }[]; unavailable: { host: string; error: string }[] }>(operation, input), 30_000, `${operation} with a silent host`);
      console.log(`[hostile] ${operation} with b silent answered in ${Date.now() - started} ms (deadline 2 s per host)`);
      expect(list.unavailable).toEqual([{ host: 'b', error: 'host b did not answer within 2000 ms' }]);
      const rows = list.containers ?? list.images ?? [];
      expect(rows.length).toBeGreaterThan(0);
      expect(new Set(rows.map((r) => r.host))).toEqual(new Set(['a']));
      if (list.containers) expect(list.containers.some((c) => c.names.includes(`/${open}`))).toBe(true);
    }
    // The recorder is not blind: b was sent the list calls it never answered.
    expect(hostile.delivered.filter((d) => d.operation === 'docker/container/list').length).toBeGreaterThan(0);
  }, 60_000);

  it('capture by name while a is up: a pinned name still runs on a (the CLI and the audit line say so), b\'s announcement of it is ignored and logged; an unpinned one is ambiguous, never b\'s', async () => {
    // The name itself, and an id that the name is a prefix of (a candidate for the bare name, as an id prefix is).
    hostile.announce([open, pinned], pinned);
    const ambiguous = (await bareNameIs(open, 'INVALID_INPUT')) as RpcError;
    expect(ambiguous.details).toEqual({ candidates: [`a/${open}`, `b/${open}`], matches: 2 });

    const exec = runCli(['exec', '--url', gateway.wsUrl, pinned, '--', 'sh', '-c', 'echo ran-here'], { stdin: 'ignore' });
    expect((await within(exec.exited, 30_000, 'the exec of the pinned name')).code, exec.stderr).toBe(0);
    expect(exec.stdout).toBe('ran-here\n');
    expect(exec.stderr).toBe('callwire: running on fleet host a (resolved by the gateway)\n');
    expect(gateway.run.stderr).toMatch(new RegExp(`ignored a host announcing a name pinned to another host.*"host":"b".*"name":"${pinned}".*"pinnedTo":"a"`));

    await until(() => existsSync(audit) && readFileSync(audit, 'utf8').includes(pinned), 'the audit line of the pinned exec', 10_000);
    const lines = readFileSync(audit, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { operation: string; container?: string; host?: string; outcome: string });
    expect(lines.filter((l) => l.operation === 'docker/container/exec' && l.container === pinned).map((l) => [l.host, l.outcome])).toEqual([['a', 'completed']]);

    const named = runCli(['exec', '--url', gateway.wsUrl, `a/${open}`, '--', 'true'], { stdin: 'ignore' });
    expect((await within(named.exited, 30_000, 'the exec of a/NAME')).code, named.stderr).toBe(0);
    expect(named.stderr).toBe('');
  }, 60_000);

  it('capture by name while a is down: exec -i -e DB_PASSWORD by bare name is refused, the pinned name is UNAVAILABLE naming a, a\'s names stay reserved; a back, they are a\'s again', async () => {
    hostile.announce([open, pinned]);
    await bareNameIs(open, 'INVALID_INPUT');
    fleet.agents.get('a')!.child.kill('SIGKILL');
    await fleet.hostState(gateway, 'a', 'down');

    const secret = runCli(['exec', '--url', gateway.wsUrl, '-i', '-e', 'DB_PASSWORD=hunter2', open, '--', 'cat'], { stdin: 'pipe' });
    secret.child.stdin.end('typed while a was down\n');
    const { code } = await within(secret.exited, 30_000, 'the exec by bare name while a is down');
    expect(code).not.toBe(0);
    expect(secret.stderr).toMatch(new RegExp(`container ${open} is ambiguous in the fleet.*\\(INVALID_INPUT\\)`));

    const onPinned = runCli(['exec', '--url', gateway.wsUrl, pinned, '--', 'true'], { stdin: 'ignore' });
    expect((await within(onPinned.exited, 30_000, 'the exec of the pinned name while a is down')).code).toBe(123);
    expect(onPinned.stderr).toMatch(/host a is down.*\(UNAVAILABLE\)/);

    // b stops announcing the name: it is still not b's, nor anyone's but a's, while a is down.
    hostile.announce(['nothing-of-a']);
    const reserved = (await bareNameIs(open, 'UNAVAILABLE')) as RpcError;
    expect(reserved.message).toMatch(new RegExp(`^host a is down: no heartbeat for \\d+ s, and it holds ${open}`));

    await fleet.agent('a');
    await fleet.hostState(gateway, 'a', 'up');
    await bareNameIs(open, 'ok');
    const back = runCli(['exec', '--url', gateway.wsUrl, pinned, '--', 'true'], { stdin: 'ignore' });
    expect((await within(back.exited, 30_000, 'the exec of the pinned name once a is back')).code, back.stderr).toBe(0);
  }, 90_000);

  it('nothing meant for a\'s containers reaches b: exec -i -e DB_PASSWORD and inspect, by bare name, pinned name and a/NAME, while a is up and while it is down', async () => {
    const from = hostile.delivered.length;
    const control = `control-${run8}`;
    hostile.announce([open, pinned], pinned);
    await bareNameIs(open, 'INVALID_INPUT');
    const client = await fleet.client(gateway);
    const callsMeantForA = async (): Promise<void> => {
      for (const ref of [open, pinned, `a/${open}`, `a/${pinned}`]) {
        const secret = runCli(['exec', '--url', gateway.wsUrl, '-i', '-e', 'DB_PASSWORD=hunter2', ref, '--', 'cat'], { stdin: 'pipe' });
        secret.child.stdin.end('meant for a\n');
        // One that went to b would wait for ever (b never answers): it is stopped, and the assertions below say where it went.
        await within(secret.exited, 15_000, `exec ${ref}`).catch(() => secret.child.kill('SIGKILL'));
        await client.call('docker/container/inspect', { containerId: ref }, { deadlineMs: 3000 }).catch(() => undefined);
      }
    };
    await callsMeantForA();
    fleet.agents.get('a')!.child.kill('SIGKILL');
    await fleet.hostState(gateway, 'a', 'down');
    await callsMeantForA();
    // The recorder hears what is sent to b: a call that names b does reach it.
    await client.call('docker/container/inspect', { containerId: `b/${control}` }, { deadlineMs: 1000 }).catch(() => undefined);
    await until(() => hostile.deliveredFor(control).length > 0, 'the control call to b recorded', 5000);

    const reachedB = hostile.delivered.slice(from);
    const refs = (name: string): Delivered[] => reachedB.filter((d) => hostile.deliveredFor(name).includes(d));
    expect(refs(open)).toEqual([]);
    expect(refs(pinned)).toEqual([]);
    expect(reachedB.filter((d) => d.operation === 'docker/container/exec')).toEqual([]);
    expect(reachedB.filter((d) => JSON.stringify(d.input ?? null).includes('hunter2'))).toEqual([]);

    await fleet.agent('a');
    await fleet.hostState(gateway, 'a', 'up');
  }, 120_000);
});

/**
 * A NATS server that asks for no authentication (issue 31, finding 5): anyone who reaches
 * it can publish on a host's calls and pose as a gateway, so an agent and a gateway
 * refuse it, and refuse to run without credentials, unless told `--nats-insecure`.
 */
describe('an agent and a gateway on a NATS server without authentication', () => {
  let server: ChildProcess;
  let url: string;

  beforeAll(async () => {
    const port = await freePort('127.0.0.1');
    url = `nats://127.0.0.1:${port}`;
    server = spawn('nats-server', ['-a', '127.0.0.1', '-p', String(port)], { stdio: 'ignore' });
    const probe = await import('@nats-io/transport-node');
    for (let i = 0; ; i++) {
      const nc = await probe.connect({ servers: url }).catch(() => undefined);
      if (nc) {
        await nc.close();
        break;
      }
      if (i > 100) throw new Error('the bare nats-server did not start');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }, 30_000);

  afterAll(() => {
    server?.kill('SIGKILL');
  });

  const noCredentials = { CALLWIRE_NATS_USER: '', CALLWIRE_NATS_PASS: '' };

  it('with credentials, an agent and a gateway refuse a server that asks for none', async () => {
    const agent = runCli(['agent', '--nats', url, '--host-id', 'a', '--nats-user', 'a'], { stdin: 'ignore', env: { ...noCredentials, CALLWIRE_NATS_PASS: 'anything' } });
    const gateway = runCli(['serve', '--port', '0', '--no-webtransport', '--nats', url, '--nats-user', 'gateway'], { stdin: 'ignore', env: { ...noCredentials, CALLWIRE_NATS_PASS: 'anything' } });
    for (const [what, run] of [['agent', agent], ['gateway', gateway]] as const) {
      const { code } = await within(run.exited, 30_000, `the ${what} refusing`);
      expect(code, `${what}: ${run.stdout}`).not.toBe(0);
      expect(run.stderr, what).toMatch(/does not ask for authentication: any process that reaches it could pose as a gateway/);
      expect(run.stdout, what).not.toMatch(/serving/);
    }
  }, 60_000);

  it('without credentials, they refuse to run at all', async () => {
    for (const args of [['agent', '--nats', url, '--host-id', 'a'], ['serve', '--port', '0', '--no-webtransport', '--nats', url]]) {
      const run = runCli(args, { stdin: 'ignore', env: noCredentials });
      const { code } = await within(run.exited, 30_000, `${args[0]} refusing`);
      expect(code).not.toBe(0);
      expect(run.stderr).toMatch(/no NATS credentials/);
    }
  }, 60_000);

  it('--nats-insecure runs so, and says so in the banner', async () => {
    const agent = runCli(['agent', '--nats', url, '--host-id', 'a', '--nats-insecure'], { stdin: 'ignore', env: noCredentials });
    try {
      await agent.waitFor(/callwire agent is serving/, 'stdout', 30_000);
      await agent.waitFor(/INSECURE \(--nats-insecure\)/, 'stdout', 5000);
    } finally {
      agent.child.kill('SIGKILL');
      await agent.exited;
    }
  }, 60_000);
});
