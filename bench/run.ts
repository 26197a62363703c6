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
import type { Client } from '../src/client/index.js';
import type { Corkable } from '../src/io/index.js';
import { client, io, nodeFlags, protocol } from './built.js';
import { costed, fmt, interleaved, median, ratios, spread, unaryLoad, type Costed } from './measure.js';
import { grpcService } from './peers.js';

const { connect, exec } = client;
const { writeBatcher } = io;
const { longLivedNodeFlags } = nodeFlags;

// This process is a long-lived SDK client that reads large streams, so it runs with the
// Node flags the README gives such processes (src/cli/node-flags.ts): without them, after
// the 64 KiB streams its exec runs cost it 1.2–5.3 CPU-seconds per GiB from run to run.
if (!longLivedNodeFlags.every((flag) => process.execArgv.includes(flag))) {
  const child = spawn(process.execPath, [...process.execArgv, ...longLivedNodeFlags, ...process.argv.slice(1)], { stdio: 'inherit' });
  child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
  await new Promise(() => undefined);
}

/** `npm run bench -- --quick`: a 30-second subset (unary, 100 B streaming, a 64 MiB exec), 3 rounds. */
const QUICK = process.argv.includes('--quick');
const RUNS = Number(process.env['BENCH_RUNS'] ?? (QUICK ? 3 : 5));
const UNARY_MS = QUICK ? 500 : 1500;
const MB = 1e6;

interface Row {
  group: string;
  metric: string;
  subject: string;
  /** The median of the runs. */
  value: number;
  unit: string;
  /** The runs' spread, when there were several. */
  min?: number;
  max?: number;
  peer?: string;
  peerValue?: number;
  /** Median of the per-round ratios to the peer (runs interleaved), or value/peerValue. */
  ratio?: number;
  ratioMin?: number;
  ratioMax?: number;
}
const rows: Row[] = [];
const digits = (n: number): number => (n < 10 ? 2 : 0);
const range = (r: { min?: number; max?: number; value: number }): string =>
  r.min === undefined || r.max === undefined ? '' : ` (${fmt(r.min, digits(r.value))}–${fmt(r.max, digits(r.value))})`;
const record = (row: Row): void => {
  if (row.ratio === undefined && row.peerValue !== undefined && row.peerValue > 0) row.ratio = row.value / row.peerValue;
  rows.push(row);
  console.error(`  ${row.group} · ${row.metric} · ${row.subject}: ${fmt(row.value, digits(row.value))}${range(row)} ${row.unit}${ratioText(row)}`);
};
const ratioText = (row: Row): string =>
  row.ratio === undefined ? '' : `  ${row.ratio.toFixed(2)}×${row.ratioMin === undefined ? '' : ` (${row.ratioMin.toFixed(2)}–${row.ratioMax!.toFixed(2)})`} ${row.peer}`;
/** A row from interleaved runs: the subject's spread, and its ratio to the peer round by round. */
const recordRuns = (base: Omit<Row, 'value' | 'min' | 'max' | 'ratio' | 'ratioMin' | 'ratioMax' | 'peerValue'>, values: number[], peerValues?: number[]): void => {
  const s = spread(values);
  const r = peerValues ? ratios(values, peerValues) : undefined;
  record({ ...base, value: s.median, min: s.min, max: s.max, ...(r ? { ratio: r.median, ratioMin: r.min, ratioMax: r.max, peerValue: median(peerValues!) } : {}) });
};

// The project's own engine (scripts/docker-engine.sh) when DOCKER_HOST names none, as the tests do.
const PROJECT_SOCKET = '/tmp/callwire-docker/docker.sock';
if (!process.env['DOCKER_HOST'] && existsSync(PROJECT_SOCKET)) process.env['DOCKER_HOST'] = `unix://${PROJECT_SOCKET}`;

// --- the server process --------------------------------------------------------
// Started as `npm start` starts its server (src/cli/node-flags.ts says why the flags).
const serverProcess = spawn(process.execPath, [...longLivedNodeFlags, '--expose-gc', '--import', 'tsx', 'bench/server.ts'], { stdio: ['ignore', 'pipe', 'inherit'] });
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
  // Batched as callwire's client batches (bench/peers.ts says why).
  const batched = writeBatcher((ws as unknown as { _socket: Corkable })._socket);
  return {
    echo: () => new Promise((resolve) => {
      waiting.push(resolve);
      batched(message.byteLength, () => ws.send(message));
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

/** The format's ceiling (bench/peers.ts): callwire's envelopes over the raw server, decoded and matched by id, nothing more. */
async function envelopeWs(): Promise<{ echo: () => Promise<unknown>; stream: (items: number, itemBytes: number) => Promise<number>; close: () => void }> {
  const { codecs, envelopes } = protocol;
  const ws = new WebSocket(`ws://127.0.0.1:${addresses.rawPort}`, { perMessageDeflate: false });
  await new Promise((resolve) => ws.once('open', resolve));
  type Frame = { type: string; id: string; payload: { output?: unknown } };
  const waiting = new Map<string, (output: unknown) => void>();
  let onStream: ((frame: Frame) => void) | undefined;
  ws.on('message', (data: Buffer) => {
    const frame = codecs.msgpack.decode(data) as Frame;
    if (onStream) return onStream(frame);
    const done = waiting.get(frame.id);
    waiting.delete(frame.id);
    done?.(frame.payload.output);
  });
  const batched = writeBatcher((ws as unknown as { _socket: Corkable })._socket);
  const input = { text: 'hello bench' };
  let calls = 0;
  return {
    echo: () =>
      new Promise((resolve) => {
        const id = `f-${(++calls).toString(36)}`;
        waiting.set(id, resolve);
        const bytes = codecs.msgpack.encode(envelopes.requested(id, { operationId: 'bench/echo', input }));
        batched(bytes.byteLength, () => ws.send(bytes));
      }),
    stream: (items, itemBytes) =>
      new Promise((resolve) => {
        let bytes = 0;
        onStream = (frame) => {
          if (frame.type !== 'call.responded') {
            onStream = undefined;
            resolve(bytes);
          } else bytes += (frame.payload.output as { data: Uint8Array }).data.byteLength;
        };
        ws.send(codecs.msgpack.encode(envelopes.requested(`s-${(++calls).toString(36)}`, { operationId: 'bench/stream', input: { items, itemBytes } })));
      }),
    close: () => ws.close(),
  };
}

const ws = await connect(addresses.wsUrl);
const wt = await connect(addresses.wtUrl, { certHash: addresses.certHash, transport: 'h2' });
// WebTransport over HTTP/3 (QUIC): the server's Deno edge and this process's Deno client edge.
const h3 = await connect(addresses.wtUrl, { certHash: addresses.certHash, transport: 'h3' }).catch((error: unknown) => {
  console.error(`  HTTP/3 rows skipped: ${String(error)}`);
  return undefined;
});
const raw = await rawWs();
const format = await envelopeWs();

// --- memory (first: later phases leave garbage that makes RSS deltas meaningless) -------
console.error('memory');
const memory = async (): Promise<{ heapUsed: number; rss: number }> => ws.call('bench/memory');
const liveCalls = async (): Promise<number> => (await ws.call<{ liveCalls: number }>('services/stats')).liveCalls;
if (!QUICK) {

{
  const before = await memory();
  const idle = await Promise.all(Array.from({ length: 1000 }, () => connect(addresses.wsUrl)));
  const after = await memory();
  record({ group: 'memory', metric: 'per idle connection (1,000 open)', subject: 'heap', value: (after.heapUsed - before.heapUsed) / 1000 / 1024, unit: 'KiB' });
  record({ group: 'memory', metric: 'per idle connection (1,000 open)', subject: 'RSS', value: (after.rss - before.rss) / 1000 / 1024, unit: 'KiB' });
  await Promise.all(idle.map((c) => c.close()));
}
// How memory grows with idle subscriptions (README "Cost growth"): 1,000 per connection.
for (const n of [1_000, 10_000, 50_000]) {
  const conns = await Promise.all(Array.from({ length: n / 1000 }, () => connect(addresses.wsUrl)));
  const before = await memory();
  const subs = conns.flatMap((c) => Array.from({ length: 1000 }, () => c.subscribe('bench/idle', null).subscribe({ error: () => undefined })));
  while ((await liveCalls()) < n + 1) await new Promise((r) => setTimeout(r, 100));
  const after = await memory();
  const metric = `per live subscription (${fmt(n)} live)`;
  record({ group: 'memory', metric, subject: 'heap', value: (after.heapUsed - before.heapUsed) / n / 1024, unit: 'KiB' });
  record({ group: 'memory', metric, subject: 'RSS', value: (after.rss - before.rss) / n / 1024, unit: 'KiB' });
  subs.forEach((sub) => sub.unsubscribe());
  await Promise.all(conns.map((c) => c.close()));
  while ((await liveCalls()) > 1) await new Promise((r) => setTimeout(r, 100));
}
}

/** callwire's carriers, as the rows name them. */
const SUBJECTS = [
  ['callwire WebSocket', 'ws'],
  ['callwire WebTransport HTTP/2', 'wt'],
  ['callwire WebTransport HTTP/3', 'h3'],
] as const;

// --- unary ------------------------------------------------------------------------
console.error('unary');
for (const concurrency of QUICK ? [1] : [1, 64]) {
  const load = (call: () => Promise<unknown>) => () => unaryLoad(call, concurrency, UNARY_MS);
  const runs = await interleaved(RUNS, {
    grpc: load(grpcEcho),
    raw: load(raw.echo),
    format: load(format.echo),
    ws: load(() => ws.call('bench/echo', { text: 'hello bench' })),
    ...(QUICK ? {} : { wt: load(() => wt.call('bench/echo', { text: 'hello bench' })) }),
    ...(QUICK || !h3 ? {} : { h3: load(() => h3.call('bench/echo', { text: 'hello bench' })) }),
  });
  const rate = (name: string): number[] => runs[name]!.map((r) => r.callsPerSec);
  const p50 = (name: string): number[] => runs[name]!.map((r) => r.p50Ms);
  const p99 = (name: string): number[] => runs[name]!.map((r) => r.p99Ms);
  for (const [name, key] of SUBJECTS) {
    if (!runs[key]) continue;
    recordRuns({ group: 'unary', metric: `calls/s @${concurrency} in flight`, subject: name, unit: 'calls/s', peer: 'grpc-js' }, rate(key), rate('grpc'));
    if (key === 'ws') recordRuns({ group: 'unary', metric: `calls/s @${concurrency} in flight`, subject: name, unit: 'calls/s', peer: 'raw ws echo' }, rate(key), rate('raw'));
    if (key === 'ws') recordRuns({ group: 'unary', metric: `calls/s @${concurrency} in flight`, subject: name, unit: 'calls/s', peer: 'format ceiling' }, rate(key), rate('format'));
    recordRuns({ group: 'unary', metric: `p50 @${concurrency}`, subject: name, unit: 'ms', peer: 'grpc-js' }, p50(key), p50('grpc'));
    recordRuns({ group: 'unary', metric: `p99 @${concurrency}`, subject: name, unit: 'ms', peer: 'grpc-js' }, p99(key), p99('grpc'));
  }
  recordRuns({ group: 'unary', metric: `calls/s @${concurrency} in flight`, subject: 'grpc-js', unit: 'calls/s', peer: 'raw ws echo' }, rate('grpc'), rate('raw'));
  recordRuns({ group: 'unary', metric: `p50 @${concurrency}`, subject: 'grpc-js', unit: 'ms' }, p50('grpc'));
  recordRuns({ group: 'unary', metric: `calls/s @${concurrency} in flight`, subject: 'raw ws + msgpack envelopes (format ceiling)', unit: 'calls/s', peer: 'raw ws echo' }, rate('format'), rate('raw'));
  recordRuns({ group: 'unary', metric: `calls/s @${concurrency} in flight`, subject: 'raw ws echo (ceiling)', unit: 'calls/s' }, rate('raw'));
  recordRuns({ group: 'unary', metric: `p50 @${concurrency}`, subject: 'raw ws echo (ceiling)', unit: 'ms' }, p50('raw'));
}

// Plain HTTP (spec §5.6): one POST per call, keep-alive connections (fetch's pool).
if (!QUICK) {
  const httpBase = addresses.wsUrl.replace(/^ws/, 'http').replace(/\/callwire$/, '');
  const body = JSON.stringify({ text: 'hello bench' });
  const httpEcho = async (): Promise<unknown> => {
    const res = await fetch(`${httpBase}/call/bench/echo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    if (res.status !== 200) throw new Error(`HTTP ${res.status}`);
    return res.json();
  };
  for (const concurrency of [1, 64]) {
    const runs = await interleaved(RUNS, {
      http: () => unaryLoad(httpEcho, concurrency, UNARY_MS),
      ws: () => unaryLoad(() => ws.call('bench/echo', { text: 'hello bench' }), concurrency, UNARY_MS),
    });
    recordRuns({ group: 'http', metric: `calls/s @${concurrency} in flight`, subject: 'callwire HTTP POST', unit: 'calls/s', peer: 'callwire WebSocket' }, runs['http']!.map((r) => r.callsPerSec), runs['ws']!.map((r) => r.callsPerSec));
    recordRuns({ group: 'http', metric: `p50 @${concurrency}`, subject: 'callwire HTTP POST', unit: 'ms', peer: 'callwire WebSocket' }, runs['http']!.map((r) => r.p50Ms), runs['ws']!.map((r) => r.p50Ms));
  }
}

// How unary latency grows with calls in flight, one WebSocket (README "Cost growth").
if (!QUICK) {
  for (const concurrency of [1, 64, 1024]) {
    const runs = await interleaved(3, { ws: () => unaryLoad(() => ws.call('bench/echo', { text: 'hello bench' }), concurrency, UNARY_MS) });
    recordRuns({ group: 'growth', metric: `unary p50, ${fmt(concurrency)} in flight`, subject: 'callwire WebSocket', unit: 'ms' }, runs['ws']!.map((r) => r.p50Ms));
    recordRuns({ group: 'growth', metric: `unary p99, ${fmt(concurrency)} in flight`, subject: 'callwire WebSocket', unit: 'ms' }, runs['ws']!.map((r) => r.p99Ms));
    recordRuns({ group: 'growth', metric: `unary calls/s, ${fmt(concurrency)} in flight`, subject: 'callwire WebSocket', unit: 'calls/s' }, runs['ws']!.map((r) => r.callsPerSec));
  }
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
for (const [label, items, itemBytes] of (QUICK ? [['100 B items', 100_000, 100]] : [
  ['100 B items', 200_000, 100],
  ['64 KiB items', 2_000, 64 * 1024],
]) as [string, number, number][]) {
  const metricOf = (r: { itemsPerSec: number; mbPerSec: number }): number => (itemBytes === 100 ? r.itemsPerSec : r.mbPerSec);
  const timed = (fn: () => Promise<number>) => async (): Promise<number> => {
    const t = performance.now();
    const bytes = await fn();
    const s = (performance.now() - t) / 1000;
    return metricOf({ itemsPerSec: items / s, mbPerSec: bytes / MB / s });
  };
  const unit = itemBytes === 100 ? 'items/s' : 'MB/s';
  const runs = await interleaved(RUNS, {
    grpc: timed(() => grpcStream(items, itemBytes)),
    raw: timed(() => raw.stream(items, itemBytes)),
    format: timed(() => format.stream(items, itemBytes)),
    ws: timed(() => callwireStream(ws, items, itemBytes)),
    ...(QUICK ? {} : { wt: timed(() => callwireStream(wt, items, itemBytes)) }),
    ...(QUICK || !h3 ? {} : { h3: timed(() => callwireStream(h3, items, itemBytes)) }),
  });
  for (const [name, key] of SUBJECTS) {
    if (!runs[key]) continue;
    recordRuns({ group: 'streaming', metric: label, subject: name, unit, peer: 'grpc-js' }, runs[key]!, runs['grpc']);
    if (key === 'ws') recordRuns({ group: 'streaming', metric: label, subject: name, unit, peer: 'raw ws' }, runs[key]!, runs['raw']);
    if (key === 'ws') recordRuns({ group: 'streaming', metric: label, subject: name, unit, peer: 'format ceiling' }, runs[key]!, runs['format']);
  }
  recordRuns({ group: 'streaming', metric: label, subject: 'grpc-js server streaming', unit, peer: 'raw ws' }, runs['grpc']!, runs['raw']);
  recordRuns({ group: 'streaming', metric: label, subject: 'raw ws + msgpack envelopes (format ceiling)', unit, peer: 'raw ws' }, runs['format']!, runs['raw']);
  recordRuns({ group: 'streaming', metric: label, subject: 'raw ws (ceiling)', unit }, runs['raw']!);
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
  const ddMiB = QUICK ? 64 : 512;
  const dd = ['dd', 'if=/dev/zero', 'bs=1M', `count=${ddMiB}`];
  const viaCallwire = (cmd: string[], client: Client = ws) => async (): Promise<number> => {
    const t = performance.now();
    let bytes = 0;
    const handle = exec(client, container, cmd, { encoding: 'binary' });
    handle.output.subscribe((f) => {
      if ('data' in f && f.stream === 'stdout') bytes += f.data.byteLength;
    });
    await handle.result;
    return bytes / MB / ((performance.now() - t) / 1000);
  };
  /** A whole process writing to /dev/null, as `… > /dev/null` in a shell: the docker CLI or ours. */
  const wholeProcess = (argv: string[], bytes: number) => (): Promise<number> =>
    new Promise((resolve, reject) => {
      const t = performance.now();
      const child = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'ignore', 'ignore'] });
      child.on('close', (code) => (code === 0 ? resolve(bytes / MB / ((performance.now() - t) / 1000)) : reject(new Error(`${argv.join(' ')} exited ${code}`))));
    });
  const ddBytes = ddMiB * 1024 * 1024;
  const costedRuns = await interleaved(RUNS, {
    sdk: () => costed(viaCallwire(dd), { server: serverProcess.pid!, client: process.pid }),
    docker: () => costed(wholeProcess([dockerCli, 'exec', container, ...dd], ddBytes)),
    ...(QUICK ? {} : { wt: () => costed(viaCallwire(dd, wt)) }),
    ...(QUICK || !h3 ? {} : { h3: () => costed(viaCallwire(dd, h3)) }),
    ...(QUICK ? {} : { cli: () => costed(wholeProcess([process.execPath, 'dist/cli/main.js', '--url', addresses.wsUrl, 'exec', container, '--', ...dd], ddBytes)) }),
  });
  const runs = Object.fromEntries(Object.entries(costedRuns).map(([k, v]) => [k, v.map((c) => c.value)]));
  const metric = `dd ${ddMiB} MiB of output`;
  recordRuns({ group: 'exec', metric, subject: 'callwire exec (SDK)', unit: 'MB/s', peer: 'docker exec' }, runs['sdk']!, runs['docker']);
  for (const [name, key] of [['callwire exec (SDK, WebTransport HTTP/2)', 'wt'], ['callwire exec (SDK, WebTransport HTTP/3)', 'h3']] as const) {
    if (runs[key]) recordRuns({ group: 'exec', metric, subject: name, unit: 'MB/s', peer: 'docker exec' }, runs[key], runs['docker']);
  }
  if (runs['cli']) recordRuns({ group: 'exec', metric: `${metric}, > /dev/null`, subject: 'callwire exec (CLI process)', unit: 'MB/s', peer: 'docker exec' }, runs['cli'], runs['docker']);
  recordRuns({ group: 'exec', metric, subject: 'docker exec (CLI process)', unit: 'MB/s' }, runs['docker']!);
  recordCpu(costedRuns, ddBytes);
  if (!QUICK) {
    const seconds = (fn: () => Promise<unknown>) => async (): Promise<number> => {
      const t = performance.now();
      await fn();
      return performance.now() - t;
    };
    const rtt = await interleaved(10, {
      callwire: seconds(viaCallwire(['true'])),
      docker: seconds(wholeProcess([dockerCli, 'exec', container, 'true'], 0)),
    });
    recordRuns({ group: 'exec', metric: 'round trip of `true`', subject: 'callwire exec (SDK)', unit: 'ms', peer: 'docker exec' }, rtt['callwire']!, rtt['docker']);
    recordRuns({ group: 'exec', metric: 'round trip of `true`', subject: 'docker exec (CLI process)', unit: 'ms' }, rtt['docker']!);
  }

  // A keystroke through a terminal: typed into a pty (util-linux `script`), through the client,
  // to a remote `cat` on a raw tty and back. Both CLIs as whole processes, the same engine.
  const catCmd = `sh -c 'stty raw -echo; echo ready; cat'`;
  if (!QUICK) {
    const cliKeys = await keystrokes(`'${process.execPath}' dist/cli/main.js --url ${addresses.wsUrl} exec -it ${container} -- ${catCmd}`);
    const dockerKeys = await keystrokes(`${dockerCli} exec -it ${container} ${catCmd}`);
    record({ group: 'exec', metric: 'keystroke echo, tty (median)', subject: 'callwire exec -it', value: cliKeys, unit: 'ms', peer: 'docker exec -it', peerValue: dockerKeys });
    record({ group: 'exec', metric: 'keystroke echo, tty (median)', subject: 'docker exec -it (CLI)', value: dockerKeys, unit: 'ms' });
  }
  spawnSync(dockerCli, ['rm', '-f', container], { env: process.env });
}

/**
 * What each exec path costs the whole machine per GiB (every process: the engine, its
 * shim, our server and client, the docker CLI; kernel time included), and how busy the
 * machine was. When the machine is saturated in both paths, throughput follows CPU per
 * byte, and this ratio says why the MB/s ratio is what it is (bench/PROFILE.md).
 */
function recordCpu(costedRuns: Record<string, Costed[]>, bytes: number): void {
  const perGiB = (key: string): number[] => costedRuns[key]!.map((c) => c.machineCpuSeconds / (bytes / 2 ** 30));
  const names: Record<string, string> = { sdk: 'callwire exec (SDK)', cli: 'callwire exec (CLI process)', docker: 'docker exec (CLI process)' };
  for (const [key, subject] of Object.entries(names)) {
    if (!costedRuns[key]) continue;
    recordRuns({ group: 'exec', metric: 'machine CPU-seconds per GiB of output', subject, unit: 's/GiB', ...(key === 'docker' ? {} : { peer: 'docker exec' }) }, perGiB(key), key === 'docker' ? undefined : perGiB('docker'));
    recordRuns({ group: 'exec', metric: 'machine busy during the run', subject, unit: '% of all cores' }, costedRuns[key]!.map((c) => 100 * c.busyShare));
  }
  // Of the SDK path's cost, callwire's own two processes (the rest: the engine, its shim, the kernel's workers).
  for (const part of ['server', 'client'] as const) {
    recordRuns({ group: 'exec', metric: `CPU-seconds per GiB of output, the ${part} process`, subject: 'callwire exec (SDK)', unit: 's/GiB' }, costedRuns['sdk']!.map((c) => (c.processes[part] ?? 0) / (bytes / 2 ** 30)));
  }
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
if (!QUICK) {
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
for (const n of QUICK ? [] : [1, 100, 10_000]) {
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
  const s = spread(rates);
  if (n === 1) single = s.median;
  record({ group: 'scaling', metric: `items/s, 100 B items, ${fmt(n)} concurrent subscription(s)`, subject: 'callwire WebSocket', value: s.median, min: s.min, max: s.max, unit: 'items/s', peer: '1 subscription', peerValue: single });
  await Promise.all(conns.map((c) => c.close()));
}

// --- report --------------------------------------------------------------------------------
await Promise.all([ws.close(), wt.close(), h3?.close()]);
raw.close();
format.close();
grpcClient.close();
serverProcess.kill('SIGTERM');

const machine = { cpu: os.cpus()[0]?.model ?? 'unknown', cores: os.cpus().length, memoryGiB: Math.round(os.totalmem() / 2 ** 30), node: process.version, platform: `${os.type()} ${os.release()}` };
const seconds = Math.round((Date.now() - started) / 1000);
mkdirSync('bench/results', { recursive: true });
writeFileSync(QUICK ? 'bench/results/quick.json' : 'bench/results/latest.json', `${JSON.stringify({ date: new Date().toISOString(), machine, runs: RUNS, seconds, rows }, null, 2)}\n`);

const lines = [
  `| group | metric | subject | median (min–max) | vs peer, median (min–max) of interleaved runs |`,
  `|---|---|---|---:|---|`,
  ...rows.map((r) => `| ${r.group} | ${r.metric} | ${r.subject} | ${fmt(r.value, digits(r.value))}${range(r)} ${r.unit} | ${ratioText(r).trim()} |`),
];
console.log(lines.join('\n'));
console.log(`\n${machine.cores} × ${machine.cpu}, ${machine.memoryGiB} GiB, Node ${machine.node}; ${RUNS} interleaved runs${QUICK ? ' (--quick)' : ''}; ${seconds} s. JSON: bench/results/${QUICK ? 'quick' : 'latest'}.json`);
process.exit(0);
