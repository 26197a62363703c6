import type { ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeEngine } from '../support/fake-engine.js';
import { drainNdjson } from '../support/ndjson-drain.js';
import { rssOf } from '../support/proc.js';
import { ServedCli } from '../support/served.js';

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

/**
 * Writes `head`, then `size` bytes of `fill`, then `tail`, as fast as the reader takes
 * them and no faster; stops when the reader goes away. An engine answer of any size
 * that costs this test little.
 */
function sendHuge(response: ServerResponse, head: string, size: number, fill: string, tail: string, status = 200): void {
  response.writeHead(status, { 'content-type': 'application/json' });
  const block = Buffer.alloc(MiB, fill);
  let sent = 0;
  let gone = false;
  response.on('close', () => (gone = true));
  const more = (): void => {
    while (!gone && sent < size) {
      sent += block.length;
      if (!response.write(block)) return void response.once('drain', more);
    }
    if (!gone) response.end(tail);
  };
  response.write(head);
  more();
}

/** A list whose `count` elements are each `element(i)`, written as the reader takes them. */
function sendList(response: ServerResponse, count: number, element: (i: number) => string): void {
  response.writeHead(200, { 'content-type': 'application/json' });
  let i = 0;
  let gone = false;
  response.on('close', () => (gone = true));
  const more = (): void => {
    while (!gone && i < count) {
      const text = (i === 0 ? '[' : ',') + element(i);
      i++;
      if (!response.write(text)) return void response.once('drain', more);
    }
    if (!gone) response.end(i === 0 ? '[]' : ']');
  };
  more();
}

const labelsOf = (bytes: number): string => JSON.stringify({ big: 'l'.repeat(bytes) });

/**
 * An engine that answers as large as a container's creator, an image's builder or a
 * busy host can make it (spec §12, DOCKER-2; issue 31, finding 1's class): the server,
 * a process of its own, reads at most 16 MiB of any one answer and ends that call with
 * DOCKER_ERROR, its memory flat, and serves on. docker-modem read each whole into one
 * string: past 512 MiB, ERR_STRING_TOO_LONG, uncaught, ended the process.
 */
describe('engine answers larger than the server reads', () => {
  const engine = new FakeEngine((request, response) => {
    const url = new URL(request.url ?? '/', 'http://engine');
    if (url.pathname === '/containers/huge/json') return sendHuge(response, '{"Id":"huge","Config":{"Labels":{"big":"', GiB, 'l', '"}}}');
    if (url.pathname === '/images/huge/json') return sendHuge(response, '{"Id":"sha256:huge","Config":{"Labels":{"big":"', GiB, 'l', '"}}}');
    if (url.pathname === '/containers/error-body/json') return sendHuge(response, '{"message":"', GiB, 'e', '"}', 500);
    // all=false: one container of 100 MiB of labels; all=true: 40,000 of 1 KiB each, 40 MiB as rows.
    if (url.pathname === '/containers/json' && url.searchParams.get('all') === 'false') return sendList(response, 1, () => `{"Id":"c0","Names":["/c0"],"Labels":${labelsOf(100 * MiB)}}`);
    if (url.pathname === '/containers/json') return sendList(response, 40_000, (i) => `{"Id":"c${i}","Names":["/c${i}"],"Image":"i","State":"running","Status":"Up","Created":1,"Labels":${labelsOf(1024)}}`);
    if (url.pathname === '/images/json') return sendList(response, 2, (i) => `{"Id":"sha256:${i}","RepoTags":["i:${i}"],"Size":1,"Created":1,"Labels":${labelsOf(100 * MiB)}}`);
    // A pull whose progress line never ends; and one quiet for 70 s before its only line (the engine extracting a layer).
    if (url.pathname === '/images/create' && url.searchParams.get('fromImage') === 'endless') return sendHuge(response, '{"status":"', GiB, 'p', '"}\n');
    if (url.pathname === '/images/create' && url.searchParams.get('fromImage') === 'quiet') {
      response.writeHead(200, { 'content-type': 'application/json' }).flushHeaders();
      const timer = setTimeout(() => response.end('{"status":"after the quiet"}\n'), 70_000);
      return void response.on('close', () => clearTimeout(timer));
    }
    response.writeHead(404, { 'content-type': 'application/json' }).end('{"message":"no such thing"}');
  });
  const served = new ServedCli();
  beforeAll(async () => {
    await engine.start();
    await served.start(engine.dockerHost);
    await served.httpCall('services/list', null);
  });
  afterAll(async () => {
    await served.stop();
    await engine.stop();
  });

  /** Calls `operation` over HTTP while sampling the server's memory; the envelope, and its peak growth over the start. */
  async function measured(operation: string, input: unknown): Promise<{ envelope: Record<string, unknown>; growth: number }> {
    const pid = served.run.child.pid!;
    const before = rssOf(pid);
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, rssOf(pid))), 50);
    try {
      const envelope = await served.httpCall(operation, input);
      peak = Math.max(peak, rssOf(pid));
      console.log(`[engine-answers] ${operation} ${JSON.stringify(input)}: server RSS +${((peak - before) / MiB).toFixed(1)} MiB`);
      return { envelope, growth: peak - before };
    } finally {
      clearInterval(sampler);
    }
  }

  const refused = (message: RegExp) => ({ outcome: 'operation_failure', error: { code: 'DOCKER_ERROR', message: expect.stringMatching(message) } });

  it.each([
    ['docker/container/inspect', { containerId: 'huge' }, /answer for container huge is larger than 16 MiB/],
    ['docker/container/logs', { containerId: 'huge' }, /answer for container huge is larger than 16 MiB/],
    ['docker/container/exec', { containerId: 'huge', cmd: ['true'] }, /answer for container huge is larger than 16 MiB/],
    ['docker/image/inspect', { image: 'huge' }, /answer for image huge is larger than 16 MiB/],
    ['docker/container/list', { all: false }, /answer for one element of the container list is larger than 16 MiB/],
    ['docker/container/list', { all: true }, /answer for the container list is larger than 16 MiB/],
    ['docker/image/list', null, /answer for one element of the image list is larger than 16 MiB/],
  ])('%s %j: DOCKER_ERROR at the bound, the server under 64 MiB more, serving on', async (operation, input, message) => {
    const { envelope, growth } = await measured(operation, input);
    expect(envelope).toMatchObject(refused(message));
    expect(growth).toBeLessThan(64 * MiB);
    await served.expectAlive();
  }, 60_000);

  it('an error answer of 1 GiB: its first 64 KiB make the message, the status the code', async () => {
    const { envelope, growth } = await measured('docker/container/inspect', { containerId: 'error-body' });
    // The message is the start of what the engine said, cut short.
    expect(envelope).toMatchObject({ outcome: 'operation_failure', error: { code: 'DOCKER_ERROR', message: expect.stringMatching(/^\{"message":"e{900,}$/) } });
    expect(JSON.stringify(envelope).length).toBeLessThan(16 * 1024);
    expect(growth).toBeLessThan(64 * MiB);
    await served.expectAlive();
  }, 60_000);

  it('a pull whose progress line never ends: IMAGE_PULL_FAILED past 1 Mi characters', async () => {
    const { envelope, growth } = await measured('docker/image/pull', { image: 'endless' });
    expect(envelope).toMatchObject({ outcome: 'operation_failure', error: { code: 'IMAGE_PULL_FAILED', message: expect.stringMatching(/progress line over 1 Mi characters/) } });
    expect(growth).toBeLessThan(64 * MiB);
    await served.expectAlive();
  }, 60_000);

  // Slow: 70 s, past docker-modem's 60 s idle timeout, which ended the pull (INTERNAL "aborted").
  it('a pull quiet for 70 s gets the line that comes after', async () => {
    const drained = await drainNdjson(`${served.base}/call/docker/image/pull`, { image: 'quiet' });
    expect(drained).toMatchObject({ values: 1, envelope: { outcome: 'success' } });
  }, 120_000);
});
