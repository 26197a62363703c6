import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawConnect, type RawEvent } from '../../src/conformance/index.js';
import { runCli, type CliRun } from '../support/cli.js';
import { rssOf } from '../support/proc.js';
import { sleep, until } from '../support/wait.js';

const CALLS = 100_000;
const MIB = 1024 * 1024;
/** The stated bound: 8 MiB of outbound bytes per connection (spec §9) plus the bookkeeping of the frames read meanwhile. */
const RSS_GROWTH_BOUND = 64 * MIB;

/**
 * A peer that pipelines requests and never reads (spec §8, BP-3). Unary answers and
 * refusals belong to no live call, so only the per-connection bound holds them: the
 * server must stop reading the peer, and TCP must push back on it.
 */
describe('outbound bytes are bounded per connection', () => {
  let server: CliRun;
  let url = '';
  beforeAll(async () => {
    server = runCli(['serve', '--port', '0', '--no-webtransport', '--conformance'], { stdin: 'ignore', env: { DOCKER_HOST: 'unix:///nonexistent.sock' } });
    url = await server.waitFor(/ws:\/\/\S+/, 'stdout', 15_000);
  });
  afterAll(async () => {
    server.child.kill('SIGKILL');
    await server.exited;
  });

  it(`${CALLS.toLocaleString('en')} pipelined calls from a peer that does not read: server RSS stays bounded, and every answer arrives once it reads`, async () => {
    const peer = await rawConnect(url, { codec: 'msgpack' });
    // Warm up the paths the flood takes, so the baseline includes their code.
    peer.request('warm', 'services/list', null);
    await peer.nextFor('warm');
    await sleep(300);
    const before = rssOf(server.child.pid!);

    peer.pause(); // never read again, until the end
    for (let i = 0; i < CALLS; i++) {
      peer.sendValue({ type: 'call.requested', id: `c${i}`, payload: { operationId: 'services/list', input: null } });
    }
    // Long enough for the server to take every request if nothing held it back.
    let peak = 0;
    for (let t = 0; t < 16; t++) {
      await sleep(500);
      peak = Math.max(peak, rssOf(server.child.pid!) - before);
    }
    console.log(`server RSS growth while the peer did not read: ${(peak / MIB).toFixed(1)} MiB (bound ${RSS_GROWTH_BOUND / MIB} MiB)`);
    expect(peak).toBeLessThan(RSS_GROWTH_BOUND);

    // Nothing was lost: once the peer reads, every call is answered, in the order asked.
    const seen: string[] = [];
    // 100,000 answers: each is looked at and dropped, not kept.
    peer.events.divert((e: RawEvent) => {
      if (e.kind === 'frame' && (e.value as { type: string }).type === 'call.responded') seen.push(e.id!);
    });
    peer.resume();
    await until(() => seen.length === CALLS, `${CALLS} answers (got ${seen.length})`, 60_000);
    expect(seen[0]).toBe('c0');
    expect(seen.at(-1)).toBe(`c${CALLS - 1}`);
    expect(new Set(seen).size).toBe(CALLS);
    await peer.close();
  }, 120_000);

  it('500 streams to a peer that does not read: the connection holds its bound, not 500 calls\' (BP-4), and every stream goes on once it reads', async () => {
    const STREAMS = 500;
    const peer = await rawConnect(url, { codec: 'msgpack' });
    await sleep(300);
    const before = rssOf(server.child.pid!);
    peer.pause();
    for (let i = 0; i < STREAMS; i++) {
      peer.sendValue({ type: 'call.requested', id: `s${i}`, payload: { operationId: 'conformance/flood', input: { items: 1_000_000, itemBytes: 64 * 1024, mode: 'iterable' } } });
    }
    let peak = 0;
    for (let t = 0; t < 16; t++) {
      await sleep(500);
      peak = Math.max(peak, rssOf(server.child.pid!) - before);
    }
    // Each call alone may hold 1 MiB (BP-1): 500 MiB if only calls were bounded. The
    // connection's bound is 8 MiB, plus the one frame each call had made before it filled.
    console.log(`server RSS growth, ${STREAMS} streams to a peer that did not read: ${(peak / MIB).toFixed(1)} MiB`);
    expect(peak).toBeLessThan(128 * MIB);
    // Nothing is lost or stuck: once the peer reads, every stream delivers more, in order.
    const next = new Map<string, number>();
    let outOfOrder = 0;
    peer.events.divert((e: RawEvent) => {
      if (e.kind !== 'frame') return;
      const frame = e.value as { id: string; type: string; payload: { output?: { seq: number } } };
      if (frame.type !== 'call.responded') return;
      const seq = frame.payload.output!.seq;
      if (seq !== (next.get(frame.id) ?? 0)) outOfOrder++;
      next.set(frame.id, seq + 1);
    });
    peer.resume();
    await until(() => next.size === STREAMS && [...next.values()].every((n) => n >= 3), `every one of ${STREAMS} streams delivering`, 60_000);
    expect(outOfOrder).toBe(0);
    await peer.close();
  }, 120_000);
});
