/**
 * npm run bench:loss (root): the carriers on a lossy link. The server runs in a network
 * namespace made for this run, behind a veth link that drops 0%, 1% and 5% of packets
 * both ways at random; this process is the client. For each carrier: a 100 MiB
 * subscription (every byte checked against its known pattern) and 1,000 unary calls one
 * after another. Writes bench/results/loss.json and prints a table. The namespace is
 * removed at the end, and no traffic leaves it.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { connect, type ConnectOptions } from '../src/client-node/index.js';
import { patternDigest, receivePattern } from '../test/support/sample-ops.js';
import { lossTable, type LossResult } from './loss-table.js';
import { fmt } from './measure.js';
import { canMakeNamespaces, LossyLink } from './netns.js';

if (!canMakeNamespaces()) {
  console.error('bench:loss needs root, iproute2 and iptables (it makes a network namespace)');
  process.exit(2);
}
const MIB = 1024 * 1024;
const TOTAL = Number(process.env['LOSS_MIB'] ?? 100) * MIB;
const CALLS = Number(process.env['LOSS_CALLS'] ?? 1000);
const CHUNK = 64 * 1024;
/** A measurement that takes longer than this is reported as not finished. */
const LIMIT_MS = Number(process.env['LOSS_LIMIT_MS'] ?? 180_000);
const LOSSES = (process.env['LOSS_SHARES'] ?? '0,0.01,0.05').split(',').map(Number);

const token = randomBytes(16).toString('hex');
const link = new LossyLink();
const [command, ...args] = link.exec([process.execPath, '--import', 'tsx', 'bench/loss-server.ts', link.address, token]);
const server = spawn(command!, args, { stdio: ['ignore', 'pipe', 'inherit'] });
const addresses = await new Promise<{ wsUrl: string; wtUrl: string; certHash: string; http3: boolean }>((resolve) =>
  createInterface({ input: server.stdout! }).once('line', (line) => resolve(JSON.parse(line))),
);

const expectedHash = patternDigest(TOTAL, CHUNK);

const carriers: [string, string, ConnectOptions][] = [
  ['WebSocket', addresses.wsUrl, { token }],
  ['WebTransport HTTP/2', addresses.wtUrl, { token, certHash: addresses.certHash, transport: 'h2' }],
  ['WebTransport HTTP/3', addresses.wtUrl, { token, certHash: addresses.certHash, transport: 'h3' }],
];

const results: LossResult[] = [];

const withLimit = <T>(work: Promise<T>): Promise<T> =>
  Promise.race([work, new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`not finished in ${LIMIT_MS / 1000} s`)), LIMIT_MS).unref())]);

for (const loss of LOSSES) {
  link.loss(loss);
  for (const [carrier, url, options] of carriers) {
    const result: LossResult = { loss, carrier };
    results.push(result);
    let client;
    try {
      client = await withLimit(connect(url, { ...options, connectTimeoutMs: 30_000 }));
      const t = performance.now();
      const { bytes, digest } = await withLimit(receivePattern(client, TOTAL, CHUNK));
      result.mbPerSec = bytes / 1e6 / ((performance.now() - t) / 1000);
      result.intact = bytes === TOTAL && digest === expectedHash;
      const latencies: number[] = [];
      const u = performance.now();
      await withLimit(
        (async () => {
          for (let i = 0; i < CALLS; i++) {
            const c = performance.now();
            await client.call('test/echo', { text: String(i) });
            latencies.push(performance.now() - c);
          }
        })(),
      );
      result.callsPerSec = CALLS / ((performance.now() - u) / 1000);
      latencies.sort((a, b) => a - b);
      result.p99Ms = latencies[Math.floor(latencies.length * 0.99)]!;
    } catch (error) {
      result.note = error instanceof Error ? error.message : String(error);
    } finally {
      await client?.close().catch(() => undefined);
    }
    console.error(`  ${(loss * 100).toFixed(0)}% loss · ${carrier}: ${result.mbPerSec === undefined ? '-' : fmt(result.mbPerSec, 1)} MB/s${result.intact === false ? ' (BYTES WRONG)' : ''}, ${result.callsPerSec === undefined ? '-' : fmt(result.callsPerSec)} calls/s, p99 ${result.p99Ms === undefined ? '-' : fmt(result.p99Ms, 1)} ms${result.note ? ` (${result.note})` : ''}`);
  }
}

server.kill('SIGTERM');
link.remove();
mkdirSync('bench/results', { recursive: true });
writeFileSync('bench/results/loss.json', `${JSON.stringify({ date: new Date().toISOString(), totalMiB: TOTAL / MIB, calls: CALLS, results }, null, 2)}\n`);
console.log(lossTable({ totalMiB: TOTAL / MIB, calls: CALLS, results }).join('\n'));
process.exit(results.some((r) => r.intact === false) ? 1 : 0);
