/**
 * A server of its own process for the hostile WebTransport tests (test/webtransport/
 * h2-capsules*.test.ts): a peer's bytes that kill it show as its exit, not the test
 * runner's. Loopback, no tokens (WebTransport over HTTP/2 needs none to open a session),
 * the sample operations, HTTP/3 only when `--http3` is given. Prints its addresses as one
 * JSON line; each `rss` line on stdin answers `{"rss":…}` after forced collections
 * (run with --expose-gc), so a test can tell retained memory from garbage not yet collected.
 */
import { createInterface } from 'node:readline';
import { startServer } from '../../src/server/index.js';
import { Probe, sampleOperations } from './sample-ops.js';

const http3 = process.argv.includes('--http3');
const server = await startServer({ port: 0, webTransportPort: 0, docker: false, http3, keepaliveMs: 0, operations: sampleOperations(new Probe()) });
process.stdout.write(`${JSON.stringify({ wsUrl: server.wsUrl, wtUrl: server.wtUrl, certHash: server.certHash, http3: server.http3 })}\n`);

const gc = (globalThis as { gc?: () => void }).gc;
createInterface({ input: process.stdin }).on('line', (line) => {
  if (line.trim() !== 'rss') return;
  void (async () => {
    // Several rounds with turns between them: streams and sessions free in steps (finalizers, timers).
    for (let i = 0; i < 4; i++) {
      gc?.();
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    process.stdout.write(`${JSON.stringify({ rss: process.memoryUsage().rss, sessions: [...server.connections()].length })}\n`);
  })();
});
process.stdin.on('end', () => void server.close().then(() => process.exit(0)));
