/**
 * npm run bench:profile: CPU profiles of the exec row, the product's main job. A
 * `callwire serve` process and an SDK client each run under --cpu-prof while the
 * client streams `dd` of 512 MiB out of a container; then each profile is summed
 * by self time, per package and per function, as bench/PROFILE.md quotes it.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { nodeFlags } from './built.js';

const { longLivedNodeFlags } = nodeFlags;

const DIR = 'bench/profiles';
rmSync(DIR, { recursive: true, force: true });
mkdirSync(DIR, { recursive: true });
const env = { ...process.env, DOCKER_HOST: process.env['DOCKER_HOST'] ?? 'unix:///tmp/callwire-docker/docker.sock' };
const MIB = Number(process.env['PROFILE_MIB'] ?? 512);

// As npm start runs it (src/cli/node-flags.ts), under the profiler.
const server = spawn(process.execPath, [...longLivedNodeFlags, '--cpu-prof', `--cpu-prof-dir=${DIR}/server`, 'dist/cli/main.js', 'serve', '--port', '0', '--no-webtransport'], { env, stdio: ['ignore', 'pipe', 'inherit'] });
const url = await new Promise<string>((resolve) => {
  createInterface({ input: server.stdout! }).on('line', (line) => {
    const m = /ws:\/\/127\.0\.0\.1:\d+\/callwire/.exec(line);
    if (m) resolve(m[0]);
  });
});
const container = spawnSync('/usr/bin/docker', ['run', '-d', '--network', 'none', 'callwire-test:busybox', 'sleep', '100000'], { encoding: 'utf8', env }).stdout.trim();
const client = `
import { connect, exec } from './dist/client-node/index.js';
const client = await connect(${JSON.stringify(url)});
const t = performance.now();
let bytes = 0;
const run = exec(client, ${JSON.stringify(container)}, ['dd', 'if=/dev/zero', 'bs=1M', 'count=${MIB}'], { encoding: 'binary' });
run.output.subscribe((f) => { if ('data' in f) bytes += f.data.byteLength; });
await run.result;
console.log(JSON.stringify({ mbPerSec: bytes / 1e6 / ((performance.now() - t) / 1000) }));
await client.close();
`;
const measured = spawnSync(process.execPath, ['--cpu-prof', `--cpu-prof-dir=${DIR}/client`, '--input-type=module', '-e', client], { encoding: 'utf8', env });
console.log(`exec dd ${MIB} MiB through the SDK, profiled: ${measured.stdout.trim()}`);
server.kill('SIGINT');
await new Promise((resolve) => server.on('exit', resolve));
spawnSync('/usr/bin/docker', ['rm', '-f', container], { env });

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}

for (const side of ['server', 'client']) {
  const file = readdirSync(join(DIR, side)).find((f) => f.endsWith('.cpuprofile'))!;
  const profile = JSON.parse(readFileSync(join(DIR, side, file), 'utf8')) as { nodes: ProfileNode[]; samples: number[]; startTime: number; endTime: number };
  const totalHits = profile.nodes.reduce((n, node) => n + (node.hitCount ?? 0), 0);
  const byPackage = new Map<string, number>();
  const byFunction = new Map<string, number>();
  for (const node of profile.nodes) {
    const hits = node.hitCount ?? 0;
    if (hits === 0) continue;
    const { functionName, url: where, lineNumber } = node.callFrame;
    const pkg = categorize(functionName, where);
    byPackage.set(pkg, (byPackage.get(pkg) ?? 0) + hits);
    const name = `${functionName || '(anonymous)'} ${shortUrl(where)}${where ? `:${lineNumber + 1}` : ''}`;
    byFunction.set(name, (byFunction.get(name) ?? 0) + hits);
  }
  const pct = (hits: number): string => `${((100 * hits) / totalHits).toFixed(1)}%`;
  console.log(`\n### ${side} (${((profile.endTime - profile.startTime) / 1e6).toFixed(1)} s profiled)\n`);
  console.log('| where | self time |\n|---|---:|');
  for (const [pkg, hits] of [...byPackage].sort((a, b) => b[1] - a[1]).slice(0, 10)) console.log(`| ${pkg} | ${pct(hits)} |`);
  console.log('\n| function | self time |\n|---|---:|');
  for (const [name, hits] of [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, 12)) console.log(`| \`${name}\` | ${pct(hits)} |`);
}

function categorize(functionName: string, where: string): string {
  if (functionName === '(idle)') return 'idle (waiting for I/O)';
  if (functionName === '(garbage collector)') return 'garbage collector';
  if (functionName === '(program)') return 'V8/native (program)';
  if (where.startsWith('node:')) return `node: ${where.slice(5).split('/')[1] ?? where.slice(5)}`;
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(where)?.[1];
  if (pkg) return pkg;
  const ours = /\/dist\/([^/]+)\//.exec(where)?.[1];
  if (ours) return `callwire ${ours}`;
  return where ? 'other' : 'native';
}

function shortUrl(where: string): string {
  return where.replace(/^file:\/\/.*?\/(dist|node_modules)\//, '$1/').replace(/^node:/, 'node:');
}
