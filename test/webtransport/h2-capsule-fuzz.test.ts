import { connect as http2Connect, constants, type ClientHttp2Session, type ClientHttp2Stream } from 'node:http2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { capsuleSequence, prng } from '../support/capsule-fuzz.js';
import { sleep } from '../support/wait.js';
import { WtChildServer } from '../support/wt-child.js';

// Issue 31, "Must show": 10,000 random and damaged capsule sequences, one after another on
// WebTransport sessions over raw HTTP/2 (a new session when one ends) (test/support/capsule-fuzz.ts), against the server as a
// child process. The process must live through all of them, its memory stay flat, and a
// fresh session be served after. FUZZ_SEED=<n> replays a run; FUZZ_COUNT=<n> sets its size.
const SEED = Number(process.env['FUZZ_SEED'] ?? Math.floor(Math.random() * 2 ** 31));
const COUNT = Number(process.env['FUZZ_COUNT'] ?? 10_000);
const IN_FLIGHT = 32;
const CONNECTIONS = 4;
const MiB = 1024 * 1024;

describe('10,000 damaged WebTransport-over-HTTP/2 capsule sequences (issue 31 #2)', () => {
  const server = new WtChildServer();
  beforeAll(() => server.start().then(() => undefined));
  afterAll(() => server.stop());

  it(`the server lives through them, its memory flat, and serves a fresh session after (seed ${SEED})`, { timeout: 180_000 }, async () => {
    const origin = new URL(server.addresses.wtUrl).origin;
    const connections: ClientHttp2Session[] = [];
    const connection = (i: number): ClientHttp2Session => {
      const slot = i % CONNECTIONS;
      const existing = connections[slot];
      if (existing && !existing.closed && !existing.destroyed) return existing;
      const fresh = http2Connect(origin, { rejectUnauthorized: false });
      fresh.on('error', () => undefined);
      connections[slot] = fresh;
      return fresh;
    };

    /** Sessions ended by their peer's FIN (or cancelled when the server keeps them): settled before memory is measured. */
    const ending: Promise<void>[] = [];
    const kept: number[] = [];
    let opened = 0;
    type Session = { stream: ClientHttp2Stream; closed: Promise<void>; used: number };

    async function openSession(i: number): Promise<Session | undefined> {
      const stream = connection(i).request({ [constants.HTTP2_HEADER_METHOD]: 'CONNECT', ':protocol': 'webtransport', [constants.HTTP2_HEADER_SCHEME]: 'https', [constants.HTTP2_HEADER_PATH]: '/callwire/msgpack' }, { endStream: false });
      stream.on('error', () => undefined);
      stream.resume(); // whatever the server answers is read and dropped
      const closed = new Promise<void>((resolve) => stream.once('close', () => resolve()));
      const status = await Promise.race([new Promise<number>((resolve) => stream.once('response', (h) => resolve(Number(h[constants.HTTP2_HEADER_STATUS])))), closed.then(() => 0)]);
      opened++;
      return status === 200 ? { stream, closed, used: 0 } : undefined;
    }

    function finish(session: Session, i: number): void {
      const { stream } = session;
      if (!stream.destroyed && !stream.writableEnded) stream.end();
      ending.push(
        Promise.race([session.closed, sleep(3000)]).then(() => {
          if (stream.closed || stream.destroyed) return session.closed;
          kept.push(i);
          stream.close(constants.NGHTTP2_CANCEL);
          return session.closed;
        }),
      );
    }

    const live = (session: Session | undefined): session is Session => session !== undefined && !session.stream.closed && !session.stream.destroyed && !session.stream.writableEnded;
    /** A round trip on the connection: the server has read what was written before it. */
    const roundTrip = (session: Session): Promise<void> => new Promise((resolve) => (session.stream.session?.ping(() => resolve()) ? undefined : resolve()));

    let next = 0;
    /**
     * Sequences go one after another on a session, up to 20, each after a round trip: a
     * sequence that ends its session sends the next to a new one. Each sequence is written
     * to a session that was open when it began.
     */
    async function runRange(to: number): Promise<void> {
      const worker = async (): Promise<void> => {
        let session: Session | undefined;
        while (next < to) {
          if (!live(session) || session.used >= 20) {
            if (session) finish(session, next);
            session = await openSession(next);
            continue;
          }
          const i = next++;
          session.used++;
          for (const bytes of capsuleSequence(prng(SEED + i))) if (live(session)) session.stream.write(bytes);
          await roundTrip(session);
          if (server.exited) throw new Error(`the server died at sequence ${i} (seed ${SEED}); stderr: ${server.stderr.slice(-3000)}`);
        }
        if (session) finish(session, to);
      };
      await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
      await Promise.all(ending.splice(0));
    }

    const warmup = Math.min(1000, COUNT);
    await runRange(warmup);
    const before = await server.rss();
    const started = Date.now();
    await runRange(COUNT);
    const seconds = (Date.now() - started) / 1000;
    for (const c of connections) c?.destroy();
    await sleep(500);
    const after = await server.rss();
    const growth = (after.rss - before.rss) / MiB;
    console.log(`h2 capsule fuzz: seed ${SEED}, ${COUNT} sequences, ${(COUNT - warmup) / seconds | 0}/s; RSS ${(before.rss / MiB).toFixed(1)} -> ${(after.rss / MiB).toFixed(1)} MiB (${growth.toFixed(1)}); sessions opened ${opened}; open connections after: ${after.sessions}; kept: ${kept.length} ${kept.slice(0, 10).join(',')}`);
    expect(server.exited, `seed ${SEED}: ${server.stderr.slice(-3000)}`).toBe(false);
    expect(growth, `RSS growth in MiB after ${COUNT} sequences (seed ${SEED})`).toBeLessThan(64);
    await server.expectServing();
  });
});
