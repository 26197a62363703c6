import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { connect, RpcError, type Client } from '../../src/client-node/index.js';
import { runCli, type CliRun } from '../support/cli.js';
import { DockerFixture, dockerCli, RUN_LABEL, TEST_IMAGE } from '../support/docker.js';
import { Fleet, type GatewayRun } from '../support/fleet.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { until } from '../support/wait.js';

const ALICE = 'alice-token-0123456789';
const MALLORY = 'mallory-token-0123456789';
const SCRIPT = 'seq 1 300000; exit 7';
const RECONNECTING = /^callwire: connection lost; reconnecting\b.*$/;
const RECONNECTED = /^callwire: reconnected; the call resumed$/;

const summary = (text: string): { bytes: number; sha256: string } => ({ bytes: Buffer.byteLength(text), sha256: createHash('sha256').update(text).digest('hex') });

/**
 * Issue 24, a gateway killed: a resumable call reattaches through another gateway, and
 * the agent holds it for its grace (docs/fleet.md, spec §4.9). Real processes: a NATS
 * server, an agent beside the test engine, two gateways G1 and G2, and a TCP relay in
 * front of them at one address, as a load balancer would be. The caller's token names
 * the agent's call, so G2, which never saw the call, takes it up from the agent; the
 * agent takes it up only for the caller's own identity.
 */
describe('a gateway killed mid-exec: the call resumes through another gateway', () => {
  const docker = new DockerFixture();
  const name = `failover-${docker.runId.slice(0, 8)}`;
  let fleet: Fleet;
  let g1: GatewayRun;
  let g2: GatewayRun;
  const clients: Client[] = [];
  const runs: CliRun[] = [];
  const proxies: TcpProxy[] = [];
  let dir = '';
  let tokensFile = '';

  const port = (g: GatewayRun): number => Number(new URL(g.wsUrl).port);
  const client = async (g: GatewayRun, token: string, resume = true): Promise<Client> => {
    const c = await connect(g.wsUrl, { token, ...(resume ? { resume: { graceMs: 30_000 } } : {}) });
    clients.push(c);
    return c;
  };
  /** Until `g` routes to host a (its services/info says it is up). */
  const hostUp = async (g: GatewayRun): Promise<void> => {
    const c = await client(g, ALICE, false);
    for (let i = 0; ; i++) {
      const info = await c.call<{ fleet?: { hosts: { id: string; state: string }[] } }>('services/info', null);
      if (info.fleet?.hosts.some((h) => h.id === 'a' && h.state === 'up')) return;
      if (i > 300) throw new Error(`host a is not up at ${g.wsUrl}: ${JSON.stringify(info.fleet)}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'callwire-failover-'));
    tokensFile = join(dir, 'tokens.json');
    writeFileSync(tokensFile, JSON.stringify({ tokens: [{ token: ALICE, subject: 'alice', scopes: ['*'] }, { token: MALLORY, subject: 'mallory', scopes: ['*'] }] }));
    const created = await docker.engine.docker.createContainer({ Image: TEST_IMAGE, name, Cmd: ['sleep', '1000000'], Labels: { [RUN_LABEL]: docker.runId }, HostConfig: { NetworkMode: 'none' } });
    await created.start();
    fleet = await Fleet.start({ hosts: ['a'], nodes: 1 });
    await fleet.agent('a');
    [g1, g2] = await Promise.all([fleet.gateway({ extraArgs: ['--tokens', tokensFile] }), fleet.gateway({ extraArgs: ['--tokens', tokensFile] })]);
    await Promise.all([hostUp(g1), hostUp(g2)]);
  }, 90_000);

  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close().catch(() => undefined)));
    for (const run of runs.splice(0)) run.child.kill('SIGKILL');
    await Promise.all(proxies.splice(0).map((p) => p.stop()));
  });

  afterAll(async () => {
    await fleet?.stop();
    await docker.cleanup();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('the token resumed at G2 by another identity is NOT_FOUND, as a token no one issued is; by its own identity, G2 takes the call up', async () => {
    const alice = await client(g1, ALICE);
    let token = '';
    const id = 'held-call';
    const stream = alice.iterate('docker/container/exec', { containerId: `a/${name}`, cmd: ['sh', '-c', 'echo ready; exec sleep 4567'] }, { id, onResumable: (t) => (token = t) });
    await stream[Symbol.asyncIterator]().next();
    expect(token, 'the caller holds a fleet token').toMatch(/^fw1\.a\./);
    const takeUp = async (c: Client, t: string, signal?: AbortSignal): Promise<unknown> => {
      // Its call.resumed, or how it failed: no item follows (the command sleeps).
      return new Promise((resolve) => {
        const items = c.takeUp({ id, token: t, seq: 1, graceMs: 30_000 }, { onResumed: () => resolve('resumed'), ...(signal ? { signal } : {}) })[Symbol.asyncIterator]();
        items.next().then(resolve, resolve);
      });
    };
    const mallory = await client(g2, MALLORY);
    const refused = await takeUp(mallory, token);
    expect(refused).toBeInstanceOf(RpcError);
    expect((refused as RpcError).code).toBe('NOT_FOUND');
    const forged = await takeUp(mallory, token.replace(/.{4}$/, 'AAAA'));
    expect(forged).toBeInstanceOf(RpcError);
    expect({ code: (forged as RpcError).code, message: (forged as RpcError).message }).toEqual({ code: 'NOT_FOUND', message: (refused as RpcError).message });
    const stop = new AbortController();
    expect(await takeUp(await client(g2, ALICE), token, stop.signal), 'its own caller takes it up at G2').toBe('resumed');
    stop.abort();
    await expect.poll(() => docker.processes(name), { timeout: 15_000 }).not.toContain('sleep 4567');
  }, 60_000);

  it(`callwire exec of '${SCRIPT}' through a relay to G1; G1 SIGKILLed mid-output and the relay turned to G2: stdout byte-identical, exit 7`, async () => {
    const direct = await dockerCli(['exec', name, 'sh', '-c', SCRIPT]);
    expect(direct.code).toBe(7);
    const proxy = await new TcpProxy().start(port(g1));
    proxies.push(proxy);
    const run = runCli(['--url', proxy.via(g1.wsUrl), '--token', ALICE, 'exec', `a/${name}`, '--', 'sh', '-c', SCRIPT], { stdin: 'ignore' });
    runs.push(run);
    await until(() => run.stdout.length >= 100_000, 'the first 100 KB of output', 30_000);
    // Nothing more crosses the relay: what the caller has is all it gets through G1.
    proxy.freeze();
    const before = run.stdout.length;
    proxy.retarget(port(g2));
    g1.run.child.kill('SIGKILL');
    const exit = await run.exited;
    expect(before, 'the gateway was killed in the middle of the output').toBeLessThan(direct.stdout.length);
    expect({ exit, stdout: summary(run.stdout) }, run.stderr).toEqual({ exit: { code: 7, signal: null }, stdout: summary(direct.stdout.toString()) });
    expect(run.stderr.split('\n').filter(Boolean)).toEqual([expect.stringMatching(RECONNECTING), expect.stringMatching(RECONNECTED)]);
    expect(proxy.accepted, 'the call went on over a new connection, to G2').toBe(2);
  }, 90_000);

  it('exec -i: 8 MB of stdin into sha256sum, its gateway SIGKILLed while it streams up and the relay turned to another: every byte read once', async () => {
    const g3 = await fleet.gateway({ extraArgs: ['--tokens', tokensFile] });
    await hostUp(g3);
    const proxy = await new TcpProxy().start(port(g2));
    proxies.push(proxy);
    const input = randomBytes(8_000_000);
    const run = runCli(['--url', proxy.via(g2.wsUrl), '--token', ALICE, 'exec', '-i', `a/${name}`, '--', 'sha256sum'], { stdin: 'pipe' });
    runs.push(run);
    run.child.stdin.on('error', () => undefined);
    run.child.stdin.end(input);
    await until(() => proxy.relayed.up >= 3_000_000, 'the first 3 MB of input', 30_000);
    proxy.freeze();
    const sent = proxy.relayed.up;
    proxy.retarget(port(g3));
    g2.run.child.kill('SIGKILL');
    const exit = await run.exited;
    expect(sent, 'the gateway was killed in the middle of the input').toBeLessThan(input.length);
    expect({ exit, stdout: run.stdout }, run.stderr).toEqual({ exit: { code: 0, signal: null }, stdout: `${createHash('sha256').update(input).digest('hex')}  -\n` });
    expect(run.stderr.split('\n').filter(Boolean)).toEqual([expect.stringMatching(RECONNECTING), expect.stringMatching(RECONNECTED)]);
  }, 90_000);
});
