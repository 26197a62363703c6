import { createHash } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RpcError } from '../../src/client/index.js';
import { runCli } from '../support/cli.js';
import { DockerFixture, dockerCli, RUN_LABEL, TEST_IMAGE } from '../support/docker.js';
import { Fleet, type GatewayRun } from '../support/fleet.js';
import { parseMetrics, sample } from '../support/prometheus.js';

/**
 * The fleet's contract (docs/fleet.md): `callwire agent --nats URLS --host-id ID`,
 * `callwire serve --nats URLS`, HOST/NAME, list rows with `host`. Two agents, a and b,
 * serve the same test engine, so every container is held by both hosts: a bare name
 * is ambiguous, and HOST/NAME picks one.
 */
describe('a fleet of two hosts behind one gateway', () => {
  const docker = new DockerFixture();
  let fleet: Fleet;
  let gateway: GatewayRun;
  const name = `fleet-${docker.runId.slice(0, 8)}`;
  let agentMetrics = '';

  beforeAll(async () => {
    fleet = await Fleet.start({ hosts: ['a', 'b'], nodes: 1 });
    const [agentA] = await Promise.all([fleet.agent('a', { extraArgs: ['--metrics', '127.0.0.1:0'] }), fleet.agent('b')]);
    agentMetrics = (await agentA.waitFor(/http:\/\/127\.0\.0\.1:\d+\/metrics/, 'stdout')).trim();
    gateway = await fleet.gateway({ waitHosts: ['a', 'b'] });
    const created = await docker.engine.docker.createContainer({ Image: TEST_IMAGE, name, Cmd: ['sleep', '1000000'], Labels: { [RUN_LABEL]: docker.runId }, HostConfig: { NetworkMode: 'none' } });
    await created.start();
  }, 60_000);

  const tokens = join(tmpdir(), `callwire-fleet-tokens-${process.pid}.json`);
  afterAll(async () => {
    await fleet?.stop();
    await docker.cleanup();
    rmSync(tokens, { force: true });
  });

  it('exec through the gateway: stdout byte for byte as docker exec prints it, stderr apart, the command\'s exit code', async () => {
    const script = 'seq 1 300000; echo to-stderr >&2; exit 7';
    const direct = await dockerCli(['exec', name, 'sh', '-c', script]);
    const run = runCli(['exec', '--url', gateway.wsUrl, `a/${name}`, '--', 'sh', '-c', script], { stdin: 'ignore' });
    const exited = await run.exited;
    expect(exited.code).toBe(7);
    expect(direct.code).toBe(7);
    expect(run.stdout.length).toBe(direct.stdout.length);
    expect(createHash('sha256').update(run.stdout).digest('hex')).toBe(createHash('sha256').update(direct.stdout).digest('hex'));
    expect(run.stderr).toBe('to-stderr\n');
  }, 60_000);

  it('a name two hosts hold is INVALID_INPUT naming both as HOST/NAME; an unknown one is CONTAINER_NOT_FOUND', async () => {
    const client = await fleet.client(gateway);
    const ambiguous = await client.call('docker/container/inspect', { containerId: name }).catch((e: unknown) => e);
    expect(ambiguous).toBeInstanceOf(RpcError);
    expect((ambiguous as RpcError).code).toBe('INVALID_INPUT');
    expect((ambiguous as RpcError).message).toContain(`a/${name}`);
    expect((ambiguous as RpcError).message).toContain(`b/${name}`);
    const missing = await client.call('docker/container/inspect', { containerId: 'no-such-container-here' }).catch((e: unknown) => e);
    expect((missing as RpcError).code).toBe('CONTAINER_NOT_FOUND');
    const onB = await client.call<{ Name: string }>('docker/container/inspect', { containerId: `b/${name}` });
    expect(onB.Name).toBe(`/${name}`);
    const noHost = await client.call('docker/container/inspect', { containerId: `zz/${name}` }).catch((e: unknown) => e);
    expect((noHost as RpcError).code).toBe('NOT_FOUND');
    expect((noHost as RpcError).message).toMatch(/no host zz/);
  });

  it('list merges every host, each row carrying its host', async () => {
    const client = await fleet.client(gateway);
    const list = await client.call<{ containers: { names: string[]; host: string }[]; unavailable: unknown[] }>('docker/container/list', { all: true });
    const ours = list.containers.filter((c) => c.names.includes(`/${name}`));
    expect(ours.map((c) => c.host).sort()).toEqual(['a', 'b']);
    expect(list.unavailable).toEqual([]);
    const onlyA = await client.call<{ containers: { host: string }[] }>('docker/container/list', { all: true, host: 'a' });
    expect(new Set(onlyA.containers.map((c) => c.host))).toEqual(new Set(['a']));
  });

  it('create takes a host, and must name one when the fleet has two; services/info lists the hosts up', async () => {
    const client = await fleet.client(gateway);
    const unnamed = await client.call('docker/container/create', { image: TEST_IMAGE, cmd: ['true'] }).catch((e: unknown) => e);
    expect((unnamed as RpcError).code).toBe('INVALID_INPUT');
    expect((unnamed as RpcError).message).toMatch(/one of a, b/);
    const created = await client.call<{ containerId: string; host: string }>('docker/container/create', { image: TEST_IMAGE, cmd: ['true'], host: 'b', labels: { [RUN_LABEL]: docker.runId } });
    expect(created.host).toBe('b');
    await client.call('docker/container/remove', { containerId: `b/${created.containerId}`, force: true });
    const info = await client.call<{ fleet: { hosts: { id: string; state: string }[] } }>('services/info', null);
    expect(info.fleet.hosts.map((h) => [h.id, h.state])).toEqual([
      ['a', 'up'],
      ['b', 'up'],
    ]);
  });

  it('a container started on an engine is routable within seconds, and gone once removed', async () => {
    const client = await fleet.client(gateway);
    const late = `${name}-late`;
    const started = Date.now();
    await dockerCli(['run', '-d', '--name', late, '--network', 'none', '--label', `${RUN_LABEL}=${docker.runId}`, TEST_IMAGE, 'sleep', '1000000']);
    let routableMs = -1;
    while (Date.now() - started < 10_000) {
      const inspected = await client.call('docker/container/inspect', { containerId: `a/${late}` }).then(
        () => true,
        () => false,
      );
      // a/NAME goes to host a whatever its table says; a bare reference needs the table.
      const routed = await client.call('docker/container/list', { all: true, host: 'a' }).then(() => true);
      const resolved = await client.call('docker/container/inspect', { containerId: late }).catch((e: RpcError) => e.code);
      if (inspected && routed && resolved === 'INVALID_INPUT') {
        routableMs = Date.now() - started;
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(routableMs, 'both hosts list the new container in their tables').toBeGreaterThanOrEqual(0);
    console.log(`[fleet] a container started by the engine was routable after ${routableMs} ms`);
    await dockerCli(['rm', '-f', late]);
    const removedAt = Date.now();
    let code: unknown;
    while (Date.now() - removedAt < 10_000) {
      code = await client.call('docker/container/inspect', { containerId: late }).catch((e: RpcError) => e.code);
      if (code === 'CONTAINER_NOT_FOUND') break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(code).toBe('CONTAINER_NOT_FOUND');
  }, 30_000);

  it('scopes name hosts: a caller holding host:b reaches b and not a, and lists only b', async () => {
    const onlyB = 'fleet-only-host-b-token-0123';
    writeFileSync(tokens, JSON.stringify({ tokens: [{ token: onlyB, subject: 'ci-b', scopes: ['container:*', 'image:inspect', 'host:b'] }] }));
    const guarded = await fleet.gateway({ extraArgs: ['--tokens', tokens], waitHosts: ['a', 'b'] });
    const client = await fleet.client(guarded, onlyB);
    const onA = await client.call('docker/container/inspect', { containerId: `a/${name}` }).catch((e: unknown) => e);
    expect((onA as RpcError).code).toBe('FORBIDDEN');
    expect((onA as RpcError).message).toMatch(/host:a/);
    const onB = await client.call<{ Name: string }>('docker/container/inspect', { containerId: `b/${name}` });
    expect(onB.Name).toBe(`/${name}`);
    // Only b may be reached, so the bare name is b's alone: a's is neither chosen nor named.
    const bare = await client.call<{ Name: string }>('docker/container/inspect', { containerId: name });
    expect(bare.Name).toBe(`/${name}`);
    const list = await client.call<{ containers: { host: string }[] }>('docker/container/list', { all: true });
    expect(new Set(list.containers.map((c) => c.host))).toEqual(new Set(['b']));
    // An operation that makes something, with no host named, runs on the one host it may reach: it is not asked to choose between a and b.
    const created = await client.call<{ containerId: string; host: string }>('docker/container/create', { image: TEST_IMAGE, cmd: ['true'], labels: { [RUN_LABEL]: docker.runId } });
    expect(created.host).toBe('b');
    await client.call('docker/container/remove', { containerId: `b/${created.containerId}`, force: true });
    const image = await client.call<{ Id: string }>('docker/image/inspect', { image: TEST_IMAGE });
    expect(image.Id).toMatch(/^sha256:/);
    // Its tokens do not reach a, so a is never offered: not even in the error of a host it may not reach.
    const onA2 = await client.call('docker/image/inspect', { image: TEST_IMAGE, host: 'a' }).catch((e: unknown) => e);
    expect((onA2 as RpcError).code).toBe('FORBIDDEN');
    // Nor does it learn which other hosts there are: services/info lists b alone, and a host it may not reach is refused alike whether it exists or not.
    const info = await client.call<{ fleet: { hosts: { id: string }[] } }>('services/info', null);
    expect(info.fleet.hosts.map((h) => h.id)).toEqual(['b']);
    const unknown = await client.call('docker/container/inspect', { containerId: `zz/${name}` }).catch((e: unknown) => e);
    expect((unknown as RpcError).code).toBe('FORBIDDEN');
  }, 30_000);

  it('metrics: the agent counts the execs it ran (agent --metrics), the gateway its hosts up', async () => {
    const run = runCli(['exec', '--url', gateway.wsUrl, `a/${name}`, '--', 'true'], { stdin: 'ignore' });
    expect((await run.exited).code).toBe(0);
    const agent = parseMetrics(await (await fetch(agentMetrics)).text());
    expect(sample(agent, 'callwire_calls_total', { operation: 'docker/container/exec', outcome: 'completed' })).toBeGreaterThanOrEqual(2);
    expect(sample(agent, 'callwire_sessions')).toBeGreaterThanOrEqual(1);
    expect(sample(agent, 'callwire_nats_reconnects_total')).toBe(0);
    const gatewayMetrics = parseMetrics(await (await fetch(gateway.wsUrl.replace('ws://', 'http://').replace('/callwire', '/metrics'))).text());
    expect(sample(gatewayMetrics, 'callwire_hosts_up')).toBe(2);
    expect(sample(gatewayMetrics, 'callwire_calls_total', { operation: 'docker/container/exec', outcome: 'completed' })).toBeGreaterThanOrEqual(2);
  });
});
