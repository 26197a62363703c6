import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Parser, type ReadEntry } from 'tar';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { runCli, type CliRun } from '../support/cli.js';
import { DockerFixture, dockerCli, RUN_LABEL, TEST_IMAGE } from '../support/docker.js';
import { Fleet, type GatewayRun } from '../support/fleet.js';
import { logFleetOnFailure } from '../support/fleet-exec.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { until } from '../support/wait.js';

const ALICE = 'alice-token-0123456789';
const RECONNECTING = /^callwire: connection lost; reconnecting\b.*$/;
const RECONNECTED = /^callwire: reconnected; the call resumed$/;
/** The file copied across a gateway's death: random bytes, so a repeated or skipped chunk cannot match by chance. */
const BIG_MIB = 96;

interface TarEntry {
  readonly path: string;
  readonly type: string;
  readonly body: Buffer;
}

/** Every entry of a tar stream, as node-tar reads it. */
async function tarEntries(tar: Buffer): Promise<TarEntry[]> {
  const entries: Promise<TarEntry>[] = [];
  const parser = new Parser();
  parser.on('entry', (entry: ReadEntry) => {
    entries.push(
      new Promise((resolve) => {
        const chunks: Buffer[] = [];
        entry.on('data', (chunk: Buffer) => chunks.push(chunk));
        entry.on('end', () => resolve({ path: entry.path, type: entry.type, body: Buffer.concat(chunks) }));
      }),
    );
  });
  await new Promise<void>((resolve, reject) => {
    parser.on('end', () => resolve());
    parser.on('error', reject);
    parser.end(tar);
  });
  return Promise.all(entries);
}

async function sha256File(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** The CLI's stdout as bytes: a tar stream is not text. */
function rawStdout(run: CliRun): () => Buffer {
  const chunks: Buffer[] = [];
  run.child.stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
  return () => Buffer.concat(chunks);
}

/**
 * Issue 34 through a fleet (docs/fleet.md, docs/cli.md "callwire cp"): `callwire cp
 * HOST/NAME:PATH` reaches a container of the fleet through a gateway, as exec does, and
 * a copy either way survives its gateway SIGKILLed mid-stream as exec does
 * (fleet-gateway-failover.test.ts): real processes — a NATS server, an agent beside the
 * test engine, two gateways and a TCP relay in front of them that a load balancer would be.
 */
describe('callwire cp through a fleet', () => {
  const docker = new DockerFixture();
  const name = `fleetcp-${docker.runId.slice(0, 8)}`;
  const root = mkdtempSync(join(tmpdir(), 'fleetcp-'));
  let fleet: Fleet;
  let g1: GatewayRun;
  let g2: GatewayRun;
  let tokensFile = '';
  let bigSha = '';
  const runs: CliRun[] = [];
  const proxies: TcpProxy[] = [];

  const port = (g: GatewayRun): number => Number(new URL(g.wsUrl).port);
  const cp = (url: string, args: string[]): CliRun => {
    const run = runCli(['--url', url, '--token', ALICE, 'cp', ...args], { stdin: 'ignore' });
    runs.push(run);
    return run;
  };
  const inContainer = async (script: string): Promise<string> => {
    const r = await dockerCli(['exec', name, 'sh', '-c', script]);
    expect(r.code, r.stderr.toString()).toBe(0);
    return r.stdout.toString();
  };

  /** Until `g` routes to host a (its services/info says it is up). */
  /**
   * Freezes the caller's relay in the middle of `run`'s copy, turns it to G2 and SIGKILLs
   * `gateway`; then the copy must go on through G2 and end 0, saying it reconnected. Returns
   * the bytes that had crossed the relay in `direction` when the gateway was killed.
   */
  const failOver = async (proxy: TcpProxy, gateway: GatewayRun, run: CliRun, direction: 'up' | 'down'): Promise<number> => {
    proxy.freeze();
    const before = proxy.relayed[direction];
    proxy.retarget(port(g2));
    gateway.run.child.kill('SIGKILL');
    const exit = await run.exited;
    expect(before, 'the gateway was killed in the middle of the copy').toBeLessThan(BIG_MIB * 2 ** 20);
    expect(exit, run.stderr).toEqual({ code: 0, signal: null });
    expect(run.stderr.split('\n').filter(Boolean)).toEqual([expect.stringMatching(RECONNECTING), expect.stringMatching(RECONNECTED)]);
    expect(proxy.accepted, 'the copy went on over a new connection, to G2').toBe(2);
    return before;
  };
  const hostUp = async (g: GatewayRun): Promise<void> => {
    const client = await fleet.client(g, ALICE);
    for (let i = 0; ; i++) {
      const info = await client.call<{ fleet?: { hosts: { id: string; state: string }[] } }>('services/info', null);
      if (info.fleet?.hosts.some((h) => h.id === 'a' && h.state === 'up')) return;
      if (i > 300) throw new Error(`host a is not up at ${g.wsUrl}: ${JSON.stringify(info.fleet)}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };

  beforeAll(async () => {
    tokensFile = join(root, 'tokens.json');
    writeFileSync(tokensFile, JSON.stringify({ tokens: [{ token: ALICE, subject: 'alice', scopes: ['*'] }] }));
    const created = await docker.engine.docker.createContainer({ Image: TEST_IMAGE, name, Hostname: 'fleetcp-host', Cmd: ['sleep', '1000000'], Labels: { [RUN_LABEL]: docker.runId }, HostConfig: { NetworkMode: 'none' } });
    await created.start();
    await inContainer(`dd if=/dev/urandom of=/big bs=1M count=${BIG_MIB} 2>/dev/null && mkdir /in`);
    bigSha = (await inContainer('sha256sum /big')).split(' ')[0]!;
    fleet = await Fleet.start({ hosts: ['a'], nodes: 1 });
    await fleet.agent('a');
    [g1, g2] = await Promise.all([fleet.gateway({ extraArgs: ['--tokens', tokensFile] }), fleet.gateway({ extraArgs: ['--tokens', tokensFile] })]);
    await Promise.all([hostUp(g1), hostUp(g2)]);
  }, 120_000);

  beforeEach(() => logFleetOnFailure(fleet));

  afterEach(async () => {
    for (const run of runs.splice(0)) if (run.child.exitCode === null && run.child.signalCode === null) run.child.kill('SIGKILL');
    await Promise.all(proxies.splice(0).map((p) => p.stop()));
  });

  afterAll(async () => {
    await fleet?.stop();
    await docker.cleanup();
    rmSync(root, { recursive: true, force: true });
  });

  it('cp a/NAME:/etc/hostname - through a gateway: a tar of one entry, hostname, holding what docker cp gives; exit 0', async () => {
    const run = cp(g1.wsUrl, [`a/${name}:/etc/hostname`, '-']);
    const stdout = rawStdout(run);
    const exit = await run.exited;
    expect(exit, run.stderr).toEqual({ code: 0, signal: null });
    expect(run.stderr, 'a pipe gets no progress and no last line').toBe('');
    const direct = await dockerCli(['cp', `${name}:/etc/hostname`, '-']);
    expect(direct.code).toBe(0);
    const [mine, theirs] = await Promise.all([tarEntries(stdout()), tarEntries(direct.stdout)]);
    expect(mine.map((e) => [e.path, e.type])).toEqual([['hostname', 'File']]);
    expect(mine[0]!.body.toString()).toBe('fleetcp-host\n');
    expect(mine.map((e) => [e.path, e.type, e.body.toString()])).toEqual(theirs.map((e) => [e.path, e.type, e.body.toString()]));
  }, 60_000);

  it('cp LOCAL a/NAME:PATH through a gateway puts the file there: exec through the fleet reads it back byte for byte', async () => {
    const local = join(root, 'upload.bin');
    const content = randomBytes(300_000);
    writeFileSync(local, content);
    const run = cp(g1.wsUrl, [local, `a/${name}:/in/uploaded.bin`]);
    expect(await run.exited, run.stderr).toEqual({ code: 0, signal: null });
    const read = runCli(['--url', g1.wsUrl, '--token', ALICE, 'exec', `a/${name}`, '--', 'sha256sum', '/in/uploaded.bin'], { stdin: 'ignore' });
    runs.push(read);
    expect(await read.exited, read.stderr).toEqual({ code: 0, signal: null });
    expect(read.stdout).toBe(`${createHash('sha256').update(content).digest('hex')}  /in/uploaded.bin\n`);
  }, 60_000);

  it("a host the fleet does not have: an error naming it and the fleet's hosts, NOT_FOUND's exit 120 as exec's, nothing written locally", async () => {
    const dir = mkdtempSync(join(root, 'nohost-'));
    const run = cp(g1.wsUrl, [`zz/${name}:/etc/hostname`, join(dir, 'hostname')]);
    const exit = await run.exited;
    expect(run.stderr).toMatch(/^Error: no host zz in the fleet \(hosts: a\) \(NOT_FOUND\)\n$/);
    expect(exit).toEqual({ code: 120, signal: null });
    expect(readdirSync(dir)).toEqual([]);
  }, 60_000);

  it(`${BIG_MIB} MiB out through a relay to G1; G1 SIGKILLed mid-copy and the relay turned to G2: the local file whole (sha256), exit 0, no staging left`, async () => {
    const dir = mkdtempSync(join(root, 'failover-'));
    const dest = join(dir, 'big');
    const proxy = await new TcpProxy().start(port(g1));
    proxies.push(proxy);
    const started = Date.now();
    const run = cp(proxy.via(g1.wsUrl), [`a/${name}:/big`, dest]);
    await until(() => proxy.relayed.down >= 16 * 2 ** 20, 'the first 16 MiB of the copy', 60_000);
    // Nothing more crosses the relay: what the caller has is all it gets through G1.
    const before = await failOver(proxy, g1, run, 'down');
    const ms = Date.now() - started;
    expect(readdirSync(dir), 'the file alone: no staging directory beside it').toEqual(['big']);
    expect(await sha256File(dest)).toBe(bigSha);
    console.log(`[fleet-cp] ${BIG_MIB} MiB out across a gateway SIGKILLed after ${(before / 2 ** 20).toFixed(1)} MiB: ${ms} ms`);
  }, 120_000);

  it(`${BIG_MIB} MiB in through a relay to a gateway SIGKILLed with input in its hands, the relay turned to G2: the file in the container whole (sha256), exit 0, nothing else beside it`, async () => {
    // A gateway of its own to kill, whose NATS connections pass a relay: G2, which the
    // caller's relay turns to, stays up whatever ran before.
    const nats = await new TcpProxy().start(Number(new URL(fleet.cluster.urls[0]!).port));
    proxies.push(nats);
    const g3 = await fleet.gateway({ urls: [nats.via(fleet.cluster.urls[0]!)], extraArgs: ['--tokens', tokensFile] });
    await hostUp(g3);
    const local = join(root, 'big-in.bin');
    writeFileSync(local, randomBytes(BIG_MIB * 2 ** 20));
    await inContainer('mkdir /failover-in');
    const proxy = await new TcpProxy().start(port(g3));
    proxies.push(proxy);
    const started = Date.now();
    const run = cp(proxy.via(g3.wsUrl), [local, `a/${name}:/failover-in/big`]);
    await until(() => proxy.relayed.up >= 16 * 2 ** 20, 'the first 16 MiB of the copy', 60_000);
    // The gateway's way to the agent stalls (a congested path): it goes on taking what
    // the credits let the caller send, and holds it, until the caller's credit runs out;
    // what it holds then dies with it.
    nats.freeze('up');
    let last = -1;
    let since = Date.now();
    await until(() => {
      if (proxy.relayed.up !== last) [last, since] = [proxy.relayed.up, Date.now()];
      return Date.now() - since > 500;
    }, 'the caller out of credit', 30_000);
    const before = await failOver(proxy, g3, run, 'up');
    const ms = Date.now() - started;
    expect(await inContainer('ls -A /failover-in'), 'the file alone: no partial or staging entry beside it').toBe('big\n');
    expect(await inContainer('sha256sum /failover-in/big')).toBe(`${await sha256File(local)}  /failover-in/big\n`);
    console.log(`[fleet-cp] ${BIG_MIB} MiB in across a gateway SIGKILLed after ${(before / 2 ** 20).toFixed(1)} MiB: ${ms} ms`);
  }, 120_000);
});
