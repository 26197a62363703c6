import { connect as connectUnix, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { prng } from '../support/capsule-fuzz.js';
import { BridgeFrameSource, edgeBridge } from '../support/bridge-fuzz.js';
import { hasHttp3 } from '../support/server-fixture.js';
import { sleep } from '../support/wait.js';
import { WtChildServer } from '../support/wt-child.js';

// Issue 31, "Must show": 10,000 HTTP/3 frames. No raw QUIC or HTTP/3 peer runs here (Node
// has no QUIC; Deno's WebTransport client sends only well-formed HTTP/3), so what is fuzzed
// is what a hostile HTTP/3 peer can make reach the Node process: the bridge frames the edge
// sends it (src/webtransport/bridge-mux.ts), written by hand on the real server's bridge
// socket, as its edge would, session after session. The server runs as a child process
// with its real Deno edge. FUZZ_SEED=<n> replays a run; FUZZ_COUNT=<n> sets its size.
const SEED = Number(process.env['FUZZ_SEED'] ?? Math.floor(Math.random() * 2 ** 31));
const COUNT = Number(process.env['FUZZ_COUNT'] ?? 10_000);
const IN_FLIGHT = 16;
const PER_SESSION = 100;
const MiB = 1024 * 1024;

/** One bridge connection opened as the edge opens a session; resolves once the server accepted it. */
async function bridgeSession(path: string, secret: string, url: string): Promise<Socket | undefined> {
  const socket = connectUnix(path);
  socket.on('error', () => undefined);
  socket.write(`${JSON.stringify({ type: 'session', secret, url })}\n`);
  const first = await new Promise<string>((resolve) => {
    let text = '';
    const onData = (chunk: Buffer): void => {
      text += chunk.toString('latin1');
      if (!text.includes('\n')) return;
      socket.off('data', onData);
      resolve(text.slice(0, text.indexOf('\n')));
    };
    socket.on('data', onData);
    socket.once('close', () => resolve(''));
  });
  socket.resume(); // the server's frames are read and dropped
  if (first.includes('"accepted"')) return socket;
  socket.destroy();
  return undefined;
}

describe.skipIf(!hasHttp3)('10,000 HTTP/3 bridge frames from a hostile edge (issue 31 #2)', () => {
  const server = new WtChildServer();
  beforeAll(() => server.start({ http3: true }).then(() => undefined));
  afterAll(() => server.stop());

  it(`the server lives through them, its memory flat, and serves a fresh session after (seed ${SEED})`, { timeout: 180_000 }, async () => {
    expect(server.addresses.http3, 'the child server runs its HTTP/3 edge').toBe(true);
    const url = server.addresses.wtUrl;
    const bridge = edgeBridge(server.pid, Number(new URL(url).port));
    let next = 0;
    let sessions = 0;
    let written = 0;

    /** Frames go one by one on a session (a turn between them) until it has carried PER_SESSION or the server ends it. */
    async function runRange(to: number): Promise<void> {
      const worker = async (): Promise<void> => {
        while (next < to) {
          const socket = await bridgeSession(bridge.socket, bridge.secret, `${url}/msgpack`);
          if (!socket) throw new Error(`the bridge refused a session (seed ${SEED}); server stderr: ${server.stderr.slice(-6000)}`);
          sessions++;
          const source = new BridgeFrameSource(prng(SEED + next));
          for (let k = 0; k < PER_SESSION && next < to && !socket.destroyed && socket.readyState === 'open'; k++) {
            next++;
            written++;
            await new Promise<void>((resolve) => socket.write(source.next(), () => resolve()));
            await new Promise((resolve) => setImmediate(resolve));
          }
          socket.destroy();
          if (server.exited) throw new Error(`the server died near frame ${next} (seed ${SEED}); stderr: ${server.stderr.slice(-3000)}`);
        }
      };
      await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
    }

    const warmup = Math.min(1000, COUNT);
    await runRange(warmup);
    await sleep(500);
    const before = await server.rss();
    const started = Date.now();
    await runRange(COUNT);
    const seconds = (Date.now() - started) / 1000;
    await sleep(1000);
    const after = await server.rss();
    const growth = (after.rss - before.rss) / MiB;
    console.log(`h3 bridge fuzz: seed ${SEED}, ${written} frames on ${sessions} sessions, ${((written - warmup) / seconds) | 0}/s; RSS ${(before.rss / MiB).toFixed(1)} -> ${(after.rss / MiB).toFixed(1)} MiB (${growth.toFixed(1)}); open connections after: ${after.sessions}`);
    expect(server.exited, `seed ${SEED}: ${server.stderr.slice(-3000)}`).toBe(false);
    expect(written).toBeGreaterThanOrEqual(COUNT);
    expect(growth, `RSS growth in MiB after ${COUNT} frames (seed ${SEED})`).toBeLessThan(64);
    await server.expectServing();
  });
});
