import { createHash } from 'node:crypto';
import { createReadStream, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, type CliRun } from '../support/cli.js';
import { dockerCli, dockerHost, TEST_IMAGE } from '../support/docker.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { peakRssSampler } from '../support/proc.js';

/**
 * Large copies with the real CLI, server and engine: 1 GiB each way with the CLI's RSS
 * bounded, and a 512 MiB copy each way across a 3 s cut of the connection (a TCP relay
 * that drops every connection and refuses new ones), whole by sha256; a cut longer than
 * the grace ends 123 with nothing at the destination's name.
 */

const CONTAINER = `cpc-large-${process.pid}`;
const GiB = 1024 ** 3;
/** The CLI's peak RSS while it copies 1 GiB: a streaming copy holds a credit window and node-tar's buffers, not the file. */
const RSS_BOUND_BYTES = 200 * 1024 * 1024;
const CUT_MS = 3000;

async function sha256File(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** The CLI's peak RSS while it runs. */
const peakRss = (run: CliRun): (() => number) => peakRssSampler(run.child.pid!, run.exited);

describe('callwire cp: large copies, bounded memory, across cut connections', () => {
  let server: CliRun;
  let url = '';
  const root = mkdtempSync(join(tmpdir(), 'cpc-large-'));
  let bigSha = '';
  let halfSha = '';
  const proxies: TcpProxy[] = [];

  const inContainer = async (script: string): Promise<string> => {
    const r = await dockerCli(['exec', CONTAINER, 'sh', '-c', script]);
    expect(r.code, r.stderr.toString()).toBe(0);
    return r.stdout.toString();
  };

  beforeAll(async () => {
    await dockerCli(['rm', '-f', CONTAINER]);
    const started = await dockerCli(['run', '-d', '--name', CONTAINER, '--network', 'none', TEST_IMAGE, 'sleep', '1000000']);
    expect(started.code, started.stderr.toString()).toBe(0);
    // Random bytes: a pattern would let a copy that repeats a chunk pass by chance.
    await inContainer(`head -c ${GiB} /dev/urandom > /big && head -c ${GiB / 2} /big > /half && mkdir /in`);
    bigSha = (await inContainer('sha256sum /big')).split(' ')[0]!;
    halfSha = (await inContainer('sha256sum /half')).split(' ')[0]!;
    server = runCli(['serve', '--port', '0', '--no-webtransport'], { stdin: 'ignore', env: { DOCKER_HOST: dockerHost } });
    url = (await server.waitFor(/ws:\/\/127\.0\.0\.1:\d+\/callwire/, 'stdout', 20_000)).trim();
  }, 300_000);

  afterAll(async () => {
    for (const proxy of proxies) await proxy.stop();
    server?.child.kill('SIGKILL');
    await dockerCli(['rm', '-f', CONTAINER]);
    rmSync(root, { recursive: true, force: true });
  });

  const relay = async (): Promise<{ proxy: TcpProxy; url: string }> => {
    const proxy = await new TcpProxy().start(Number(new URL(url).port));
    proxies.push(proxy);
    return { proxy, url: proxy.via(url) };
  };

  it(`1 GiB out and 1 GiB in, whole, the CLI's RSS under ${RSS_BOUND_BYTES / 2 ** 20} MiB each way`, async () => {
    const out = runCli(['--url', url, 'cp', `${CONTAINER}:/big`, join(root, 'big')], { stdin: 'ignore' });
    const outPeak = peakRss(out);
    expect((await out.exited).code, out.stderr).toBe(0);
    expect(await sha256File(join(root, 'big'))).toBe(bigSha);
    const into = runCli(['--url', url, 'cp', join(root, 'big'), `${CONTAINER}:/in/big`], { stdin: 'ignore' });
    const inPeak = peakRss(into);
    expect((await into.exited).code, into.stderr).toBe(0);
    expect((await inContainer('sha256sum /in/big')).split(' ')[0]).toBe(bigSha);
    console.log(`cp 1 GiB: peak RSS out ${(outPeak() / 2 ** 20).toFixed(1)} MiB, in ${(inPeak() / 2 ** 20).toFixed(1)} MiB`);
    expect(outPeak()).toBeGreaterThan(0);
    expect(outPeak()).toBeLessThan(RSS_BOUND_BYTES);
    expect(inPeak()).toBeLessThan(RSS_BOUND_BYTES);
    rmSync(join(root, 'big'));
    await inContainer('rm /in/big');
  }, 900_000);

  it('512 MiB out, the connection cut for 3 s in the middle: the file whole (sha256), exit 0', async () => {
    const { proxy, url: via } = await relay();
    proxy.cutAfterBytes(200 * 2 ** 20, CUT_MS, 'down');
    const run = runCli(['--url', via, 'cp', `${CONTAINER}:/half`, join(root, 'half-out')], { stdin: 'ignore' });
    expect((await run.exited).code, run.stderr).toBe(0);
    expect(proxy.cuts, 'the relay was cut in the middle of the copy').toBe(1);
    expect(run.stderr).toMatch(/^callwire: connection lost; reconnecting/m);
    expect(run.stderr).toMatch(/^callwire: reconnected; the call resumed$/m);
    expect(await sha256File(join(root, 'half-out'))).toBe(halfSha);
    rmSync(join(root, 'half-out'));
  }, 600_000);

  it('512 MiB in, the connection cut for 3 s in the middle: the file whole in the container (sha256), exit 0', async () => {
    const local = join(root, 'half-local');
    const fetched = runCli(['--url', url, 'cp', `${CONTAINER}:/half`, local], { stdin: 'ignore' });
    expect((await fetched.exited).code, fetched.stderr).toBe(0);
    const { proxy, url: via } = await relay();
    proxy.cutAfterBytes(200 * 2 ** 20, CUT_MS, 'up');
    const run = runCli(['--url', via, 'cp', local, `${CONTAINER}:/in/half`], { stdin: 'ignore' });
    expect((await run.exited).code, run.stderr).toBe(0);
    expect(proxy.cuts, 'the relay was cut in the middle of the copy').toBe(1);
    expect(run.stderr).toMatch(/^callwire: reconnected; the call resumed$/m);
    expect((await inContainer('sha256sum /in/half')).split(' ')[0]).toBe(halfSha);
    await inContainer('rm /in/half');
  }, 600_000);

  it('a cut longer than the grace (--resume 2, cut 10 s) in the middle of a copy out: exit 123, nothing at the destination, no staging left', async () => {
    const dir = mkdtempSync(join(root, 'grace-'));
    const { proxy, url: via } = await relay();
    proxy.cutAfterBytes(100 * 2 ** 20, 10_000, 'down');
    const run = runCli(['--url', via, 'cp', '--resume', '2', `${CONTAINER}:/half`, join(dir, 'half')], { stdin: 'ignore' });
    expect((await run.exited).code, run.stderr).toBe(123);
    expect(proxy.cuts).toBe(1);
    expect(run.stderr).toMatch(/^Error: .*could not be resumed within its 2 s grace \(UNAVAILABLE\)$/m);
    expect(existsSync(join(dir, 'half'))).toBe(false);
    expect(readdirSync(dir)).toEqual([]);
  }, 600_000);
});
