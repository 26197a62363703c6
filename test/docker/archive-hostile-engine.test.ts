import type { ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeEngine } from '../support/fake-engine.js';
import { rssOf } from '../support/proc.js';
import { ServedCli } from '../support/served.js';
import { sleep } from '../support/wait.js';

const MiB = 1024 * 1024;
const stat = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64');
const GOOD_STAT = stat({ name: 'f', size: 1, mode: 420, mtime: '2026-01-01T00:00:00Z', linkTarget: '' });

/** What the fake engine wrote of its endless tar stream, and whether its reader went away. */
const endless = { sent: 0, closed: false };

/** A tar stream that never ends, written only as fast as the server reads it. */
function sendEndless(response: ServerResponse): void {
  response.writeHead(200, { 'content-type': 'application/x-tar', 'x-docker-container-path-stat': GOOD_STAT });
  const block = Buffer.alloc(MiB, 't');
  response.on('close', () => (endless.closed = true));
  const more = (): void => {
    while (!endless.closed) {
      endless.sent += block.length;
      if (!response.write(block)) return void response.once('drain', more);
    }
  };
  more();
}

/**
 * An engine that answers the archive API as a hostile one could (spec §12, ARC-3, ARC-4,
 * ARC-1): a path stat header that is garbage, of the wrong shape or huge; a redirect; a
 * tar stream that never ends; an error body of 1 GiB. The server, a process of its own,
 * ends each call with DOCKER_ERROR (or reads only what its caller takes), its memory
 * bounded, and serves on; the path reaches the engine only as an encoded query parameter.
 */
describe('a hostile engine behind the archive operations', () => {
  const engine = new FakeEngine((request, response) => {
    const url = new URL(request.url ?? '/', 'http://engine');
    const inspect = /^\/containers\/([^/]+)\/json$/.exec(url.pathname);
    if (inspect) return void response.setHeader('content-type', 'application/json').end(JSON.stringify({ Id: inspect[1], Config: { Labels: null }, State: { Running: true } }));
    const archive = /^\/containers\/([^/]+)\/archive$/.exec(url.pathname)?.[1];
    if (archive === 'garbage') return void response.writeHead(200, { 'x-docker-container-path-stat': '%%% not base64 json' }).end();
    if (archive === 'wrong-shape') return void response.writeHead(200, { 'x-docker-container-path-stat': stat({ name: 7, size: -1 }) }).end();
    if (archive === 'huge-header') return void response.writeHead(200, { 'x-docker-container-path-stat': 'A'.repeat(1024 * 1024) }).end();
    if (archive === 'redirect') return void response.writeHead(301, { location: 'http://127.0.0.1:1/elsewhere' }).end();
    if (archive === 'endless') return sendEndless(response);
    if (archive === 'error-body') {
      // Whatever the request's body, the answer is 1 GiB of message, written as it is read.
      response.writeHead(500, { 'content-type': 'application/json' });
      const block = Buffer.alloc(MiB, 'e');
      let left = 1024;
      let gone = false;
      response.on('close', () => (gone = true));
      const more = (): void => {
        while (!gone && left-- > 0) if (!response.write(left === 1023 ? '{"message":"' : block)) return void response.once('drain', more);
        if (!gone) response.end('"}');
      };
      return more();
    }
    response.writeHead(404, { 'content-type': 'application/json' }).end('{"message":"no such thing"}');
  });
  const served = new ServedCli();
  beforeAll(async () => {
    await engine.start();
    await served.start(engine.dockerHost);
  }, 30_000);
  afterAll(async () => {
    await served.stop();
    await engine.stop();
  });

  const refused = (message: RegExp) => ({ outcome: 'operation_failure', error: { code: 'DOCKER_ERROR', message: expect.stringMatching(message) } });

  it.each([
    ['garbage', /path stat is not base64 JSON/],
    ['wrong-shape', /path stat is not one/],
    ['huge-header', /headers are bounded to 16 KiB/],
    ['redirect', /a redirect, which is never followed/],
  ])('a path stat from %s: DOCKER_ERROR for stat and get, the server serving on', async (containerId, message) => {
    for (const operation of ['docker/container/archive/stat', 'docker/container/archive/get']) {
      expect(await served.httpCall(operation, { containerId, path: '/f' })).toMatchObject(refused(message));
    }
    await served.expectAlive();
  }, 30_000);

  it('the path reaches the engine as one encoded query parameter, .. and all, never in the URL path', async () => {
    await served.httpCall('docker/container/archive/stat', { containerId: 'nothing', path: '/a/../../b c&d=e#f?g%h' });
    const asked = engine.paths.filter((p) => p.startsWith('/containers/nothing/archive'));
    expect(asked).toEqual(['/containers/nothing/archive?path=%2Fa%2F..%2F..%2Fb%20c%26d%3De%23f%3Fg%25h']);
  });

  it('a tar stream that never ends is read only as the caller takes it; the caller\'s end stops the engine', async () => {
    const pid = served.run.child.pid!;
    const before = rssOf(pid);
    let taken = 0;
    let peak = before;
    for await (const item of served.client.iterate<{ data?: Uint8Array }>('docker/container/archive/get', { containerId: 'endless', path: '/f' })) {
      taken += item.data?.byteLength ?? 0;
      if (taken < 64 * MiB) continue;
      // The caller stops reading: the engine is held back by the call's credit, not buffered.
      const sentThen = endless.sent;
      await sleep(1500);
      peak = Math.max(peak, rssOf(pid));
      console.log(`[archive-hostile] taken ${taken / MiB} MiB; engine sent ${sentThen / MiB} MiB, then ${(endless.sent - sentThen) / MiB} MiB more while the caller paused; RSS +${((peak - before) / MiB).toFixed(1)} MiB`);
      expect(endless.sent - taken).toBeLessThan(32 * MiB);
      break;
    }
    await expect.poll(() => endless.closed, { timeout: 10_000 }).toBe(true);
    expect(peak - before).toBeLessThan(64 * MiB);
    await served.expectAlive();
  }, 60_000);

  it('an error answer of 1 GiB to a put: its first 64 KiB make the message, the server\'s memory flat', async () => {
    const pid = served.run.child.pid!;
    const before = rssOf(pid);
    const input = (async function* () {
      yield { data: new Uint8Array(1024) };
    })();
    const put = served.client.iterate('docker/container/archive/put', { containerId: 'error-body', path: '/d' }, { input });
    await expect((async () => {
      for await (const item of put) void item;
    })()).rejects.toMatchObject({ code: 'DOCKER_ERROR', message: expect.stringMatching(/^\{"message":"e{900,}$/) });
    expect(rssOf(pid) - before).toBeLessThan(64 * MiB);
    await served.expectAlive();
  }, 60_000);
});
