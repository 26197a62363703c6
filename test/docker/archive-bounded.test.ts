import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DOCKER_CLI, dockerCli, DockerFixture, dockerHost } from '../support/docker.js';
import { rssGrowthSampler } from '../support/proc.js';
import { ServedCli } from '../support/served.js';
import { sleep } from '../support/wait.js';

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;
/** What the server may grow by while a GiB passes through it, either way: a few credit windows and the engine's buffers. */
const BOUND = 96 * MiB;

/** `docker cp CONTAINER:PATH -`'s bytes as they come, never whole in this process. */
function dockerCpOut(containerId: string, path: string): AsyncIterable<Buffer> {
  const child = spawn(DOCKER_CLI, ['cp', `${containerId}:${path}`, '-'], { env: { ...process.env, DOCKER_HOST: dockerHost }, stdio: ['ignore', 'pipe', 'inherit'] });
  return child.stdout as AsyncIterable<Buffer>;
}

/**
 * A heavy user's copies (spec §12, ARC-4, ARC-5; docs/security.md "Archives"): 1 GiB out
 * to a caller that reads slowly, and 1 GiB in, through `callwire serve`, a process of its
 * own, against the real engine. The server's memory grows by the credit windows, not by
 * the archive; both copies are docker cp's bytes.
 */
describe('a GiB each way through the server, its memory bounded', () => {
  const docker = new DockerFixture();
  const served = new ServedCli();
  let c = '';
  /** The put's destination: another container, since the engine locks a container while it is copied out of (a put into it would wait for the get that feeds it). */
  let into = '';
  beforeAll(async () => {
    await served.start(dockerHost);
    c = await docker.container();
    into = await docker.container();
    const made = await dockerCli(['exec', c, 'sh', '-c', `head -c ${GiB} /dev/urandom > /tmp/gig`]);
    expect(made.code).toBe(0);
    expect((await dockerCli(['exec', into, 'mkdir', '/in'])).code).toBe(0);
  }, 300_000);
  afterAll(async () => {
    await served.stop();
    await docker.cleanup();
  });

  it('get: 1 GiB to a slow reader, the tar docker cp\'s; the server grows by less than the bound', async () => {
    const hash = createHash('sha256');
    let bytes = 0;
    let nextPause = 128 * MiB;
    let terminal: unknown;
    const rss = rssGrowthSampler(served.run.child.pid!);
    let growth = 0;
    try {
      for await (const item of served.client.iterate<{ data?: Uint8Array; terminal?: true }>('docker/container/archive/get', { containerId: c, path: '/tmp/gig' })) {
        if (item.data) {
          hash.update(item.data);
          bytes += item.data.byteLength;
          // The reader stops for a while every 128 MiB: what the engine sends meanwhile waits in the engine.
          if (bytes >= nextPause) {
            nextPause += 128 * MiB;
            await sleep(500);
          }
        } else if (item.terminal) terminal = item;
      }
    } finally {
      growth = rss.stop();
    }
    const reference = createHash('sha256');
    let referenceBytes = 0;
    for await (const chunk of dockerCpOut(c, '/tmp/gig')) {
      reference.update(chunk);
      referenceBytes += chunk.byteLength;
    }
    const sha256 = hash.digest('hex');
    console.log(`[archive-bounded] get ${(bytes / MiB).toFixed(0)} MiB: server RSS +${(growth / MiB).toFixed(1)} MiB`);
    expect({ bytes, sha256 }).toEqual({ bytes: referenceBytes, sha256: reference.digest('hex') });
    expect(terminal).toEqual({ terminal: true, bytes, sha256 });
    expect(growth).toBeLessThan(BOUND);
  }, 600_000);

  it('put: docker cp\'s 1 GiB tar as the input stream, the file whole in the container; the server grows by less than the bound', async () => {
    const hash = createHash('sha256');
    let bytes = 0;
    const input = (async function* () {
      for await (const chunk of dockerCpOut(c, '/tmp/gig')) {
        hash.update(chunk);
        bytes += chunk.byteLength;
        yield { data: chunk };
      }
    })();
    const rss = rssGrowthSampler(served.run.child.pid!);
    let terminal: unknown;
    let growth: number;
    try {
      for await (const item of served.client.iterate('docker/container/archive/put', { containerId: into, path: '/in' }, { input })) terminal = item;
    } finally {
      growth = rss.stop();
    }
    console.log(`[archive-bounded] put ${(bytes / MiB).toFixed(0)} MiB: server RSS +${(growth / MiB).toFixed(1)} MiB`);
    expect(terminal).toEqual({ terminal: true, bytes, sha256: hash.digest('hex') });
    const sum = async (containerId: string, path: string): Promise<string | undefined> => (await dockerCli(['exec', containerId, 'sha256sum', path])).stdout.toString().split(/\s+/)[0];
    expect(await sum(into, '/in/gig')).toBe(await sum(c, '/tmp/gig'));
    expect(growth).toBeLessThan(BOUND);
    await served.expectAlive();
  }, 600_000);
});
