import { accessSync, constants, mkdtempSync, opendirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Header } from 'tar';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import { CraftedArchiveServer } from '../support/crafted-archive-server.js';
import { peakRssSampler } from '../support/proc.js';

/**
 * callwire cp of many small entries (issue 46 item 5; docs/security.md "Copies"): a copy's
 * memory must not grow with the number of entries. The same directory of N and of 4N
 * empty files, copied out by the real CLI with its heap capped (HEAP_CAP); its peak RSS
 * may not grow by more than GROWTH_BOUND from one to the other. 7c6a127 kept ~4 KB an entry (node-tar made files
 * slower than it took headers, and the guard remembered every name): 60,000 more entries
 * were ~240 MB more. The whole 300,000, through a real container and engine, is
 * `npx tsx bench/cp-many.ts`.
 *
 * The archive is headers only, made as they are taken (a server of crafted archives: the
 * subject is the CLI), and the copy lands on tmpfs where there is one: the time is then
 * the CLI's, not the disk's.
 */

const N = 20_000;
const GROWTH_BOUND = 24 * 1024 * 1024;
/**
 * The CLI's old generation, capped: the CLI turns incremental marking off, so its old
 * generation is collected only when full and its RSS can rise with garbage alone; under
 * the cap, what is left is what is live, and a copy that kept something per entry runs
 * out of it (7c6a127 did at about 12,000 entries).
 */
const HEAP_CAP = '--max-old-space-size=64';

/** The headers of `count` empty files under x/, 64 to a chunk, made as they are asked for. */
async function* emptyFiles(count: number): AsyncGenerator<Buffer> {
  const header = (path: string, type: 'File' | 'Directory'): Buffer => {
    const block = Buffer.alloc(512);
    new Header({ path, type, size: 0, mode: type === 'Directory' ? 0o755 : 0o644, mtime: new Date(1_700_000_000_000), uid: 0, gid: 0 }).encode(block);
    return block;
  };
  let batch = [header('x/', 'Directory')];
  for (let i = 0; i < count; i++) {
    batch.push(header(`x/f${i}`, 'File'));
    if (batch.length === 64) {
      yield Buffer.concat(batch);
      batch = [];
    }
  }
  yield Buffer.concat([...batch, Buffer.alloc(1024)]);
}

/** A place for the copies: tmpfs when the machine has one we may write, else the temporary directory. */
function scratch(): string {
  try {
    accessSync('/dev/shm', constants.W_OK);
    return mkdtempSync('/dev/shm/cpc-many-');
  } catch {
    return mkdtempSync(join(tmpdir(), 'cpc-many-'));
  }
}

function countEntries(dir: string): number {
  const handle = opendirSync(dir);
  let count = 0;
  while (handle.readSync() !== null) count++;
  handle.closeSync();
  return count;
}

describe('callwire cp of many small entries', () => {
  const root = scratch();
  let crafted: CraftedArchiveServer;

  beforeAll(async () => {
    crafted = await CraftedArchiveServer.start();
    crafted.serve('few', { tar: () => emptyFiles(N) });
    crafted.serve('many', { tar: () => emptyFiles(4 * N) });
  });
  afterAll(async () => {
    await crafted?.close();
    rmSync(root, { recursive: true, force: true });
  });

  /** Copies `name`'s /x out whole; the CLI's peak RSS and the seconds it took. */
  const copy = async (name: string, count: number): Promise<{ peak: number; seconds: number }> => {
    const started = Date.now();
    const run = runCli(['--url', crafted.wsUrl, 'cp', `${name}:/x`, join(root, name)], { stdin: 'ignore', env: { NODE_OPTIONS: HEAP_CAP } });
    const peak = peakRssSampler(run.child.pid!, run.exited);
    expect((await run.exited).code, run.stderr).toBe(0);
    expect(countEntries(join(root, name))).toBe(count);
    rmSync(join(root, name), { recursive: true });
    return { peak: peak(), seconds: (Date.now() - started) / 1000 };
  };

  it(`${N} and ${4 * N} empty files: every one copied, the CLI's peak RSS grown by less than ${GROWTH_BOUND / 2 ** 20} MiB from one to the other`, async () => {
    const few = await copy('few', N);
    const many = await copy('many', 4 * N);
    console.log(`cp of empty files: ${N} in ${few.seconds} s, peak RSS ${(few.peak / 2 ** 20).toFixed(1)} MiB; ${4 * N} in ${many.seconds} s, ${(many.peak / 2 ** 20).toFixed(1)} MiB`);
    expect(few.peak).toBeGreaterThan(0);
    expect(many.peak - few.peak).toBeLessThan(GROWTH_BOUND);
  }, 300_000);
});
