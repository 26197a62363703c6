import type { IncomingMessage } from 'node:http';
import { lastValueFrom, toArray } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { engineStream } from '../../src/operations/index.js';
import { connect, type Client } from '../../src/client-node/index.js';
import { DockerFixture, dockerHost, RUN_LABEL, TEST_IMAGE } from '../support/docker.js';
import { drainNdjson } from '../support/ndjson-drain.js';
import { rssOf } from '../support/proc.js';
import { ServedCli } from '../support/served.js';
import { ServerFixture } from '../support/server-fixture.js';
import { sleep } from '../support/wait.js';

const MiB = 1024 * 1024;
/** 160,000 lines of 4,000 x: 640,000,000 bytes of text (610 MiB), 651 MB in the engine's json-file log. */
const LINES = 160_000;
const LINE_CHARS = 4000;
const BIG_LOG = `yes "$(head -c ${LINE_CHARS} /dev/zero | tr '\\0' x)" | head -n ${LINES}`;

/**
 * Engine answers a container can grow, and engine streams that may be quiet (spec §12,
 * DOCKER-2; issue 31, findings 1 and 10). The server runs as a process of its own, so a
 * read that kills it shows as its exit, and its memory is its own in /proc.
 */
// The three run side by side (describe.concurrent): the quiet one only waits for 70 s, and the
// others measure a server process of their own, which its waiting does not touch.
describe.concurrent('a log larger than a string can be, read without follow', () => {
  const docker = new DockerFixture();
  const served = new ServedCli();
  let bigLog = '';
  beforeAll(async () => {
    await served.start(dockerHost);
    // The container writes its log and exits; the engine keeps the log (json-file).
    bigLog = await docker.container({}, ['sh', '-c', BIG_LOG]);
    const container = docker.engine.docker.getContainer(bigLog);
    const started = Date.now();
    while ((await container.inspect()).State.Running) {
      if (Date.now() - started > 200_000) throw new Error('the container did not write its log within 200 s');
      await sleep(500);
    }
    expect((await container.inspect()).State.ExitCode).toBe(0);
  }, 240_000);
  afterAll(async () => {
    await served.stop();
    await docker.cleanup();
  });

  it('streams 610 MiB of log under the caller\'s reading, the server growing under 64 MiB, and serves on', async ({ expect }) => {
    const pid = served.run.child.pid!;
    const small = await docker.container({}, ['sh', '-c', 'echo small; sleep 1000000']);
    // Warm: the first logs call loads what every later one uses.
    await expect.poll(async () => (await drainNdjson(`${served.base}/call/docker/container/logs`, { containerId: small })).lastText, { timeout: 10_000 }).toBe('small');
    const before = rssOf(pid);
    let peak = before;
    let samples = 0;
    const seen = new Set<number>();
    let read = 0;
    const sampler = setInterval(() => {
      peak = Math.max(peak, rssOf(pid));
      samples++;
      seen.add(read);
    }, 100);
    let paused = false;
    try {
      const drained = await drainNdjson(`${served.base}/call/docker/container/logs`, { containerId: bigLog }, (bytes) => {
        read = bytes;
        // Once, 64 MiB in: the reader stops for 3 s. A server that read the engine ahead of
        // its caller would hold what the engine sent meanwhile (it sends ~40 MB/s here).
        if (!paused && bytes > 64 * MiB) {
          paused = true;
          return 3000;
        }
        return undefined;
      });
      expect(drained.envelope).toMatchObject({ outcome: 'success' });
      expect(drained.values).toBe(LINES);
      expect(drained.textChars).toBe(LINES * LINE_CHARS);
    } finally {
      clearInterval(sampler);
    }
    // Bytes came as the engine sent them: the reader saw many counts between none and all.
    expect(seen.size).toBeGreaterThan(10);
    expect(samples).toBeGreaterThan(10);
    const growth = peak - before;
    console.log(`[engine-streams] ${LINES * LINE_CHARS} bytes of log over HTTP: server RSS ${(before / MiB).toFixed(1)} -> peak ${(peak / MiB).toFixed(1)} MiB (+${(growth / MiB).toFixed(1)})`);
    expect(growth).toBeLessThan(64 * MiB);
    await served.expectAlive();
    expect((await drainNdjson(`${served.base}/call/docker/container/logs`, { containerId: small })).lastText).toBe('small');
  }, 300_000);
});

describe.concurrent('a TTY container\'s log line without its end', () => {
  const docker = new DockerFixture();
  const fx = new ServerFixture();
  let client: Client;
  beforeAll(async () => {
    await fx.start({ docker: docker.engine, webTransportPort: false });
    client = await connect(fx.server.wsUrl);
  });
  afterAll(async () => {
    await client.close();
    await fx.stop();
    await docker.cleanup();
  });

  it('goes out in pieces of at most 256 Ki characters (LIM-1), never held whole', async ({ expect }) => {
    // 20 MiB with no newline on a terminal: one piece would pass maxFrameBytes (16 MiB) and end the call.
    const created = await docker.engine.docker.createContainer({
      Image: TEST_IMAGE,
      Tty: true,
      Cmd: ['sh', '-c', 'head -c 20971520 /dev/zero | tr "\\0" a; echo; echo next; sleep 1000000'],
      Labels: { [RUN_LABEL]: docker.runId },
      HostConfig: { NetworkMode: 'none' },
    });
    await created.start();
    let frames: { text: string }[] = [];
    for (let attempt = 0; frames.at(-1)?.text.trimEnd() !== 'next'; attempt++) {
      if (attempt > 40) throw new Error(`the log did not end in "next": ${frames.at(-1)?.text.slice(0, 100)}`);
      await sleep(500);
      frames = await lastValueFrom(client.subscribe<{ text: string }>('docker/container/logs', { containerId: created.id }).pipe(toArray()));
    }
    expect(frames.length).toBeGreaterThan(20 * 4);
    expect(Math.max(...frames.map((f) => f.text.length))).toBeLessThanOrEqual(256 * 1024);
    expect(frames.reduce((n, f) => n + (f.text.match(/a/g)?.length ?? 0), 0)).toBe(20 * MiB);
  }, 60_000);
});

describe.concurrent('engine streams that are quiet for longer than a minute', () => {
  const docker = new DockerFixture();
  const fx = new ServerFixture();
  let client: Client;
  beforeAll(async () => {
    await fx.start({ docker: docker.engine, webTransportPort: false });
    client = await connect(fx.server.wsUrl);
  });
  afterAll(async () => {
    await client.close();
    await fx.stop();
    await docker.cleanup();
  });

  // Slow: holds the streams 70 s, past docker-modem's 60 s idle timeout, which ended both (INTERNAL "aborted").
  it('a followed log, the engine\'s event stream and an exec, quiet for 70 s, deliver what comes after', async ({ expect }) => {
    const containerId = await docker.container();
    const lines: string[] = [];
    let failure: unknown;
    let ended = false;
    const sub = client.subscribe<{ text: string }>('docker/container/logs', { containerId, follow: true }).subscribe({
      next: (l) => lines.push(l.text),
      error: (e: unknown) => (failure = e),
      complete: () => (ended = true),
    });
    // An exec that says nothing for 68 s: its hijacked socket is the engine's too.
    const execFrames: Record<string, unknown>[] = [];
    let execFailure: unknown;
    const exec = client.subscribe<Record<string, unknown>>('docker/container/exec', { containerId, cmd: ['sh', '-c', 'sleep 68; echo exec after the quiet'] }).subscribe({
      next: (f) => execFrames.push(f),
      error: (e: unknown) => (execFailure = e),
    });
    // The event stream the fleet agent follows, as it opens it, filtered to a label no container has yet.
    const label = `callwire.test-quiet=${docker.runId}`;
    const events = await engineStream(docker.engine, { path: '/events', query: { filters: JSON.stringify({ label: [label] }) } });
    let eventText = '';
    let eventError: Error | undefined;
    events.on('data', (chunk: Buffer) => (eventText += chunk.toString('utf8')));
    events.on('error', (e: Error) => (eventError = e));
    try {
      await sleep(70_000);
      expect({ lines, failure, ended, eventText, eventError: eventError?.message }).toEqual({ lines: [], failure: undefined, ended: false, eventText: '', eventError: undefined });
      // A line written now, by another process of the container onto its log.
      await docker.engine.docker
        .getContainer(containerId)
        .exec({ Cmd: ['sh', '-c', 'echo after the quiet > /proc/1/fd/1'] })
        .then((exec) => exec.start({ Detach: true }));
      await docker.container({ 'callwire.test-quiet': docker.runId });
      await expect.poll(() => lines, { timeout: 15_000 }).toEqual(['after the quiet']);
      await expect.poll(() => eventText, { timeout: 15_000 }).toMatch(/"Action":"create"/);
      expect(failure).toBeUndefined();
      expect(execFailure).toBeUndefined();
      expect(execFrames).toEqual([{ stream: 'stdout', text: 'exec after the quiet\n' }, expect.objectContaining({ exitCode: 0, terminal: true })]);
    } finally {
      sub.unsubscribe();
      exec.unsubscribe();
      (events as IncomingMessage).destroy();
    }
  }, 120_000);
});
