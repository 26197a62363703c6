/**
 * npm run bench: callwire side by side with its peers on loopback, in one run.
 * Each figure is the median of several runs, with its ratio to the peer. Prints a
 * table and writes bench/results/latest.json. Not part of npm test.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { createInterface } from 'node:readline';
import * as grpc from '@grpc/grpc-js';
import WebSocket from 'ws';
import { connect, exec, type Client } from '../src/client/index.js';
import { fmt, median, medianOf, unaryLoad, type UnaryResult } from './measure.js';
import { grpcService } from './peers.js';

const RUNS = Number(process.env['BENCH_RUNS'] ?? 3);
const UNARY_MS = 1500;
const MB = 1e6;

interface Row {
  group: string;
  metric: string;
  subject: string;
  value: number;
  unit: string;
  peer?: string;
  peerValue?: number;
  ratio?: number;
}
const rows: Row[] = [];
const record = (row: Row): void => {
  if (row.peerValue !== undefined && row.peerValue > 0) row.ratio = row.value / row.peerValue;
  rows.push(row);
  const ratio = row.ratio === undefined ? '' : `  (${row.ratio.toFixed(2)}× ${row.peer})`;
  console.error(`  ${row.group} · ${row.metric} · ${row.subject}: ${fmt(row.value, row.value < 10 ? 2 : 0)} ${row.unit}${ratio}`);
};

// The project's own engine (scripts/docker-engine.sh) when DOCKER_HOST names none, as the tests do.
const PROJECT_SOCKET = '/tmp/callwire-docker/docker.sock';
if (!process.env['DOCKER_HOST'] && existsSync(PROJECT_SOCKET)) process.env['DOCKER_HOST'] = `unix://${PROJECT_SOCKET}`;

// --- the server process --------------------------------------------------------
const serverProcess = spawn(process.execPath, ['--expose-gc', '--import', 'tsx', 'bench/server.ts'], { stdio: ['ignore', 'pipe', 'inherit'] });
const addresses = await new Promise<{ wsUrl: string; wtUrl: string; certHash: string; grpcPort: number; rawPort: number; docker: { on: boolean; reason: string } }>((resolve) =>
  createInterface({ input: serverProcess.stdout! }).once('line', (line) => resolve(JSON.parse(line))),
);
const started = Date.now();

// --- peers' clients --------------------------------------------------------------
const GrpcClient = grpc.makeGenericClientConstructor(grpcService, 'Bench');
const grpcClient = new GrpcClient(`127.0.0.1:${addresses.grpcPort}`, grpc.credentials.createInsecure()) as unknown as {
  echo: (req: unknown, cb: (e: Error | null, r: unknown) => void) => void;
  stream: (req: unknown) => NodeJS.ReadableStream & { cancel(): void };
  close(): void;
};
const grpcEcho = (): Promise<unknown> => new Promise((resolve, reject) => grpcClient.echo({ text: 'hello bench' }, (e, r) => (e ? reject(e) : resolve(r))));

async function rawWs(): Promise<{ echo: () => Promise<unknown>; stream: (items: number, itemBytes: number) => Promise<number>; close: () => void }> {
  const ws = new WebSocket(`ws://127.0.0.1:${addresses.rawPort}`, { perMessageDeflate: false });
  await new Promise((resolve) => ws.once('open', resolve));
  const waiting: ((data: Buffer) => void)[] = [];
  let onStream: ((data: Buffer) => void) | undefined;
  ws.on('message', (data: Buffer) => (onStream ? onStream(data) : waiting.shift()?.(data)));
  const message = Buffer.from('hello bench');
  return {
    echo: () => new Promise((resolve) => {
      waiting.push(resolve);
      ws.send(message);
    }),
    stream: (items, itemBytes) =>
      new Promise((resolve) => {
        let bytes = 0;
        onStream = (data) => {
          if (data.byteLength === 1 && data[0] === 0xff) {
            onStream = undefined;
            resolve(bytes);
          } else bytes += data.byteLength;
        };
        const req = Buffer.alloc(9);
        req[0] = 0x01;
        req.writeUInt32BE(items, 1);
        req.writeUInt32BE(itemBytes, 5);
        ws.send(req);
      }),
    close: () => ws.close(),
  };
}

const ws = await connect(addresses.wsUrl);
const wt = await connect(addresses.wtUrl, { certHash: addresses.certHash });
const raw = await rawWs();

// --- memory (first: later phases leave garbage that makes RSS deltas meaningless) -------
console.error('memory');
const memory = async (): Promise<{ heapUsed: number; rss: number }> => ws.call('bench/memory');
const liveCalls = async (): Promise<number> => (await ws.call<{ liveCalls: number }>('services/stats')).liveCalls;
{
  const before = await memory();
  const idle = await Promise.all(Array.from({ length: 1000 }, () => connect(addresses.wsUrl)));
  const after = await memory();
  record({ group: 'memory', metric: 'per idle connection (1,000 open)', subject: 'heap', value: (after.heapUsed - before.heapUsed) / 1000 / 1024, unit: 'KiB' });
  record({ group: 'memory', metric: 'per idle connection (1,000 open)', subject: 'RSS', value: (after.rss - before.rss) / 1000 / 1024, unit: 'KiB' });
  await Promise.all(idle.map((c) => c.close()));
}
{
  const conns = await Promise.all(Array.from({ length: 10 }, () => connect(addresses.wsUrl)));
  const before = await memory();
  const subs = conns.flatMap((c) => Array.from({ length: 1000 }, () => c.subscribe('bench/idle', null).subscribe({ error: () => undefined })));
  while ((await liveCalls()) < 10_001) await new Promise((r) => setTimeout(r, 100));
  const after = await memory();
  record({ group: 'memory', metric: 'per live subscription (10,000 live)', subject: 'heap', value: (after.heapUsed - before.heapUsed) / 10_000 / 1024, unit: 'KiB' });
  record({ group: 'memory', metric: 'per live subscription (10,000 live)', subject: 'RSS', value: (after.rss - before.rss) / 10_000 / 1024, unit: 'KiB' });
  subs.forEach((s) => s.unsubscribe());
  await Promise.all(conns.map((c) => c.close()));
}

// --- unary ------------------------------------------------------------------------
console.error('unary');
for (const concurrency of [1, 64]) {
  const run = (call: () => Promise<unknown>): Promise<UnaryResult> => medianOf(RUNS, () => unaryLoad(call, concurrency, UNARY_MS), (r) => r.callsPerSec);
  const g = await run(grpcEcho);
  const r = await run(raw.echo);
  for (const [name, client] of [['callwire WebSocket', ws], ['callwire WebTransport', wt]] as const) {
    const c = await run(() => client.call('bench/echo', { text: 'hello bench' }));
    record({ group: 'unary', metric: `calls/s @${concurrency} in flight`, subject: name, value: c.callsPerSec, unit: 'calls/s', peer: 'grpc-js', peerValue: g.callsPerSec });
    record({ group: 'unary', metric: `p50 @${concurrency}`, subject: name, value: c.p50Ms, unit: 'ms', peer: 'grpc-js', peerValue: g.p50Ms });
    record({ group: 'unary', metric: `p99 @${concurrency}`, subject: name, value: c.p99Ms, unit: 'ms', peer: 'grpc-js', peerValue: g.p99Ms });
  }
  record({ group: 'unary', metric: `calls/s @${concurrency} in flight`, subject: 'grpc-js', value: g.callsPerSec, unit: 'calls/s', peer: 'raw ws echo', peerValue: r.callsPerSec });
  record({ group: 'unary', metric: `p50 @${concurrency}`, subject: 'grpc-js', value: g.p50Ms, unit: 'ms' });
  record({ group: 'unary', metric: `calls/s @${concurrency} in flight`, subject: 'raw ws echo (ceiling)', value: r.callsPerSec, unit: 'calls/s' });
  record({ group: 'unary', metric: `p50 @${concurrency}`, subject: 'raw ws echo (ceiling)', value: r.p50Ms, unit: 'ms' });
}

// --- streaming ----------------------------------------------------------------------
console.error('streaming');
async function callwireStream(client: Client, items: number, itemBytes: number): Promise<number> {
  let bytes = 0;
  for await (const item of client.iterate<{ data: Uint8Array }>('bench/stream', { items, itemBytes })) bytes += item.data.byteLength;
  return bytes;
}
function grpcStream(items: number, itemBytes: number): Promise<number> {
  return new Promise((resolve, reject) => {
    let bytes = 0;
    const call = grpcClient.stream({ items, itemBytes });
    call.on('data', (m: { data: Uint8Array }) => (bytes += m.data.byteLength));
    call.on('end', () => resolve(bytes));
    call.on('error', reject);
  });
}
for (const [label, items, itemBytes] of [
  ['100 B items', 200_000, 100],
  ['64 KiB items', 2_000, 64 * 1024],
] as const) {
  const timed = async (fn: () => Promise<number>) => {
    const t = performance.now();
    const bytes = await fn();
    const s = (performance.now() - t) / 1000;
    return { itemsPerSec: items / s, mbPerSec: bytes / MB / s };
  };
  const metricOf = (r: { itemsPerSec: number; mbPerSec: number }): number => (itemBytes === 100 ? r.itemsPerSec : r.mbPerSec);
  const unit = itemBytes === 100 ? 'items/s' : 'MB/s';
  const g = await medianOf(RUNS, () => timed(() => grpcStream(items, itemBytes)), metricOf);
  const r = await medianOf(RUNS, () => timed(() => raw.stream(items, itemBytes)), metricOf);
  for (const [name, client] of [['callwire WebSocket', ws], ['callwire WebTransport', wt]] as const) {
    const c = await medianOf(RUNS, () => timed(() => callwireStream(client, items, itemBytes)), metricOf);
    record({ group: 'streaming', metric: label, subject: name, value: metricOf(c), unit, peer: 'grpc-js', peerValue: metricOf(g) });
  }
  record({ group: 'streaming', metric: label, subject: 'grpc-js server streaming', value: metricOf(g), unit, peer: 'raw ws', peerValue: metricOf(r) });
  record({ group: 'streaming', metric: label, subject: 'raw ws (ceiling)', value: metricOf(r), unit });
}

// --- exec -------------------------------------------------------------------------------
console.error('exec');
const dockerHost = process.env['DOCKER_HOST'];
const dockerCli = '/usr/bin/docker';
if (!addresses.docker.on) {
  console.error(`  exec skipped: ${addresses.docker.reason}`);
  rows.push({ group: 'exec', metric: 'skipped', subject: addresses.docker.reason, value: 0, unit: '' });
} else {
  const run = spawnSync(dockerCli, ['run', '-d', '--network', 'none', '--label', 'callwire.bench=1', 'callwire-test:busybox', 'sleep', '100000'], { encoding: 'utf8', env: { ...process.env, ...(dockerHost ? { DOCKER_HOST: dockerHost } : {}) } });
  const container = run.stdout.trim();
  const dd = ['dd', 'if=/dev/zero', 'bs=1M', 'count=512'];
  const viaCallwire = async (cmd: string[]): Promise<{ seconds: number; bytes: number }> => {
    const t = performance.now();
    let bytes = 0;
    const handle = exec(ws, container, cmd, { encoding: 'binary' });
    handle.output.subscribe((f) => {
      if ('data' in f && f.stream === 'stdout') bytes += f.data.byteLength;
    });
    await handle.result;
    return { seconds: (performance.now() - t) / 1000, bytes };
  };
  const viaDocker = (cmd: string[]): Promise<{ seconds: number; bytes: number }> =>
    new Promise((resolve) => {
      const t = performance.now();
      let bytes = 0;
      const child = spawn(dockerCli, ['exec', container, ...cmd], { stdio: ['ignore', 'pipe', 'ignore'] });
      child.stdout.on('data', (c: Buffer) => (bytes += c.byteLength));
      child.on('close', () => resolve({ seconds: (performance.now() - t) / 1000, bytes }));
    });
  const mbps = (r: { seconds: number; bytes: number }): number => r.bytes / MB / r.seconds;
  const c = await medianOf(RUNS, () => viaCallwire(dd), mbps);
  const d = await medianOf(RUNS, () => viaDocker(dd), mbps);
  record({ group: 'exec', metric: 'dd 512 MiB of output', subject: 'callwire exec', value: mbps(c), unit: 'MB/s', peer: 'docker exec', peerValue: mbps(d) });
  record({ group: 'exec', metric: 'dd 512 MiB of output', subject: 'docker exec (CLI)', value: mbps(d), unit: 'MB/s' });
  const rtt = async (fn: (cmd: string[]) => Promise<{ seconds: number }>): Promise<number> => {
    const times: number[] = [];
    for (let i = 0; i < 10; i++) times.push((await fn(['true'])).seconds * 1000);
    return median(times);
  };
  const ct = await rtt(viaCallwire);
  const dt = await rtt(viaDocker);
  record({ group: 'exec', metric: 'round trip of `true`', subject: 'callwire exec', value: ct, unit: 'ms', peer: 'docker exec', peerValue: dt });
  record({ group: 'exec', metric: 'round trip of `true`', subject: 'docker exec (CLI)', value: dt, unit: 'ms' });

  // A keystroke through a terminal: typed into a pty (util-linux `script`), through the client,
  // to a remote `cat` on a raw tty and back. Both CLIs as whole processes, the same engine.
  const catCmd = `sh -c 'stty raw -echo; echo ready; cat'`;
  const cliKeys = await keystrokes(`'${process.execPath}' dist/cli/main.js --url ${addresses.wsUrl} exec -it ${container} -- ${catCmd}`);
  const dockerKeys = await keystrokes(`${dockerCli} exec -it ${container} ${catCmd}`);
  record({ group: 'exec', metric: 'keystroke echo, tty (median)', subject: 'callwire exec -it', value: cliKeys, unit: 'ms', peer: 'docker exec -it', peerValue: dockerKeys });
  record({ group: 'exec', metric: 'keystroke echo, tty (median)', subject: 'docker exec -it (CLI)', value: dockerKeys, unit: 'ms' });
  spawnSync(dockerCli, ['rm', '-f', container], { env: process.env });
}

/** Median milliseconds from a byte written into a pty running `command` to its echo, over 200 keys. */
async function keystrokes(command: string): Promise<number> {
  const child = spawn('script', ['-qfec', command, '/dev/null'], { stdio: ['pipe', 'pipe', 'ignore'], env: process.env });
  let seen = '';
  let wake: (() => void) | undefined;
  child.stdout.on('data', (d: Buffer) => {
    seen += d.toString('latin1');
    wake?.();
  });
  const until = (text: string): Promise<void> =>
    new Promise((resolve) => {
      const check = (): void => {
        if (seen.includes(text)) resolve();
        else wake = check;
      };
      check();
    });
  await until('ready');
  const times: number[] = [];
  for (let i = 0; i < 200; i++) {
    const key = String.fromCharCode(97 + (i % 26));
    seen = '';
    const t = performance.now();
    child.stdin.write(key);
    await until(key);
    times.push(performance.now() - t);
  }
  child.kill();
  return median(times);
}

// --- msgpack decode with and without the native extension ----------------------------------
console.error('codec');
{
  const decodeRate = (disabled: boolean): { native: boolean; framesPerSecond: number } => {
    const out = spawnSync(process.execPath, ['--import', 'tsx', 'bench/msgpack-decode.ts'], { encoding: 'utf8', env: { ...process.env, ...(disabled ? { MSGPACKR_NATIVE_ACCELERATION_DISABLED: 'true' } : {}) } });
    return JSON.parse(out.stdout.trim().split('\n').pop()!) as { native: boolean; framesPerSecond: number };
  };
  // Interleaved, so a noisy minute hits both.
  const withExt: number[] = [];
  const without: number[] = [];
  let loaded = false;
  for (let i = 0; i < RUNS; i++) {
    const a = decodeRate(false);
    loaded = a.native;
    withExt.push(a.framesPerSecond);
    without.push(decodeRate(true).framesPerSecond);
  }
  const w = median(withExt);
  const wo = median(without);
  record({ group: 'codec', metric: 'msgpack decode, 250 B exec frames', subject: `with msgpackr-extract${loaded ? '' : ' (not loaded!)'}`, value: w, unit: 'frames/s', peer: 'without', peerValue: wo });
  record({ group: 'codec', metric: 'msgpack decode, 250 B exec frames', subject: 'without the extension', value: wo, unit: 'frames/s' });
}

// --- scaling -------------------------------------------------------------------------------
console.error('scaling');
let single = 0;
for (const n of [1, 10, 100, 1000]) {
  const conns = await Promise.all(Array.from({ length: Math.min(n, 10) }, () => connect(addresses.wsUrl)));
  const measure = async (): Promise<number> => {
    let items = 0;
    const subs = Array.from({ length: n }, (_, i) =>
      conns[i % conns.length]!.subscribe('bench/stream', { items: 100_000_000, itemBytes: 100 }).subscribe({ next: () => items++, error: () => undefined }),
    );
    await new Promise((r) => setTimeout(r, 500)); // warm up
    const from = items;
    const t = performance.now();
    await new Promise((r) => setTimeout(r, 2000));
    const rate = (items - from) / ((performance.now() - t) / 1000);
    subs.forEach((s) => s.unsubscribe());
    while ((await liveCalls()) > 1) await new Promise((r) => setTimeout(r, 50));
    return rate;
  };
  const rates: number[] = [];
  for (let i = 0; i < RUNS; i++) rates.push(await measure());
  const rate = median(rates);
  if (n === 1) single = rate;
  record({ group: 'scaling', metric: `items/s, 100 B items, ${n} concurrent subscription(s)`, subject: 'callwire WebSocket', value: rate, unit: 'items/s', peer: '1 subscription', peerValue: single });
  await Promise.all(conns.map((c) => c.close()));
}

// --- report --------------------------------------------------------------------------------
await Promise.all([ws.close(), wt.close()]);
raw.close();
grpcClient.close();
serverProcess.kill('SIGTERM');

const machine = { cpu: os.cpus()[0]?.model ?? 'unknown', cores: os.cpus().length, memoryGiB: Math.round(os.totalmem() / 2 ** 30), node: process.version, platform: `${os.type()} ${os.release()}` };
const seconds = Math.round((Date.now() - started) / 1000);
mkdirSync('bench/results', { recursive: true });
writeFileSync('bench/results/latest.json', `${JSON.stringify({ date: new Date().toISOString(), machine, runs: RUNS, seconds, rows }, null, 2)}\n`);

const lines = [
  `| group | metric | subject | value | vs peer |`,
  `|---|---|---|---:|---|`,
  ...rows.map((r) => `| ${r.group} | ${r.metric} | ${r.subject} | ${fmt(r.value, r.value < 10 ? 2 : 0)} ${r.unit} | ${r.ratio === undefined ? '' : `${r.ratio.toFixed(2)}× ${r.peer}`} |`),
];
console.log(lines.join('\n'));
console.log(`\n${machine.cores} × ${machine.cpu}, ${machine.memoryGiB} GiB, Node ${machine.node}; median of ${RUNS} runs; ${seconds} s. JSON: bench/results/latest.json`);
process.exit(0);
