/**
 * callwire cp of many small entries, whole (issue 46 item 5; docs/security.md "Copies"):
 * a container of `--files` empty files (300,000 by default), copied out by the real CLI
 * through a real `callwire serve` and the real engine, the CLI's peak RSS (VmHWM) against
 * the bound the issue set (256 MiB), every file counted at the destination. The suite's
 * test/cli/cp-many.test.ts holds the same property at 20,000 and 80,000 entries; this is
 * the full size, which takes minutes (most of it the disk making files, on both sides).
 *   npx tsx bench/cp-many.ts [--files 300000] [--dest DIR]   (after npm run build)
 */
import { mkdtempSync, opendirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli } from '../test/support/cli.js';
import { dockerCli, dockerHost, TEST_IMAGE } from '../test/support/docker.js';
import { peakRssSampler } from '../test/support/proc.js';

const arg = (name: string): string | undefined => {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 ? process.argv[at + 1] : undefined;
};
const FILES = Number(arg('files') ?? 300_000);
const BOUND = 256 * 1024 * 1024;
const MIB = 1024 * 1024;
const CONTAINER = `cpc-bench-many-${process.pid}`;

const seconds = (since: number): number => Math.round((Date.now() - since) / 100) / 10;

function countEntries(dir: string): number {
  const handle = opendirSync(dir);
  let count = 0;
  while (handle.readSync() !== null) count++;
  handle.closeSync();
  return count;
}

async function main(): Promise<void> {
  const root = mkdtempSync(join(arg('dest') ?? tmpdir(), 'cp-many-'));
  await dockerCli(['rm', '-f', CONTAINER]);
  const started = await dockerCli(['run', '-d', '--name', CONTAINER, '--network', 'none', TEST_IMAGE, 'sleep', '1000000']);
  if (started.code !== 0) throw new Error(`docker run: ${started.stderr.toString()}`);
  const server = runCli(['serve', '--port', '0', '--no-webtransport'], { stdin: 'ignore', env: { DOCKER_HOST: dockerHost } });
  try {
    let at = Date.now();
    const made = await dockerCli(['exec', CONTAINER, 'sh', '-c', `mkdir /many && cd /many && seq 1 ${FILES} | xargs touch`]);
    if (made.code !== 0) throw new Error(`making the files: ${made.stderr.toString()}`);
    console.log(`${FILES} empty files made in the container in ${seconds(at)} s`);
    const url = (await server.waitFor(/ws:\/\/127\.0\.0\.1:\d+\/callwire/, 'stdout', 20_000)).trim();
    at = Date.now();
    const copy = runCli(['--url', url, 'cp', `${CONTAINER}:/many`, join(root, 'many')], { stdin: 'ignore' });
    const peak = peakRssSampler(copy.child.pid!, copy.exited);
    const { code } = await copy.exited;
    const took = seconds(at);
    if (code !== 0) throw new Error(`callwire cp exited ${code}: ${copy.stderr}`);
    const count = countEntries(join(root, 'many'));
    const verdict = count === FILES && peak() < BOUND ? 'ok' : 'FAILED';
    console.log(`callwire cp of ${FILES} empty files: ${count} at the destination, ${took} s, the CLI's peak RSS ${(peak() / MIB).toFixed(1)} MiB (bound ${BOUND / MIB} MiB): ${verdict}`);
    if (verdict !== 'ok') process.exitCode = 1;
  } finally {
    server.child.kill('SIGKILL');
    await dockerCli(['rm', '-f', CONTAINER]);
    rmSync(root, { recursive: true, force: true });
  }
}

await main();
