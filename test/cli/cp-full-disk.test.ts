import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import { CraftedArchiveServer } from '../support/crafted-archive-server.js';
import { craftedTar, type CraftedEntry } from '../support/crafted-tar.js';
import { skipTitle } from '../support/skip.js';
import { treeListing } from '../support/tree-listing.js';

/**
 * callwire cp onto a disk that fills (docs/security.md "Copies", a heavy user): a tmpfs
 * of 1 MiB and 64 inodes as the destination's filesystem. A copy that runs out of bytes
 * or of inodes part way ends 125 with the disk's own words and the entry it stopped at;
 * its staging directory goes, so the disk is as free as before and the destination as it was.
 */

/** Mounting needs root (CAP_SYS_ADMIN), which .ci/run and the tests' machine have. */
function canMount(): boolean {
  const probe = mkdtempSync(join(tmpdir(), 'cpc-mount-probe-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', probe], { stdio: 'ignore' });
    execFileSync('umount', [probe], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  } finally {
    rmSync(probe, { recursive: true, force: true });
  }
}
const mountable = canMount();

describe.skipIf(!mountable)(skipTitle('callwire cp onto a full disk', mountable ? undefined : 'mounting a tmpfs needs root'), () => {
  const root = mkdtempSync(join(tmpdir(), 'cpc-full-'));
  const disks: string[] = [];
  let crafted: CraftedArchiveServer;

  /** A fresh tmpfs of its own for each test, with a file of the user's on it. */
  const freshDisk = (name: string): string => {
    const disk = join(root, name);
    mkdirSync(disk);
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m,nr_inodes=64', 'tmpfs', disk]);
    disks.push(disk);
    writeFileSync(join(disk, 'kept'), "the user's own\n");
    return disk;
  };

  beforeAll(async () => {
    crafted = await CraftedArchiveServer.start();
    crafted.serve('big', { tar: craftedTar([{ path: 'x', type: 'File', body: 'x'.repeat(4 * 1024 * 1024) }]), dir: false });
    const many: CraftedEntry[] = [{ path: 'x/', type: 'Directory' }, ...Array.from({ length: 200 }, (_, i): CraftedEntry => ({ path: `x/f${i}`, type: 'File' }))];
    crafted.serve('many', { tar: craftedTar(many) });
  });
  afterAll(async () => {
    await crafted?.close();
    for (const disk of disks) execFileSync('umount', [disk], { stdio: 'ignore' });
    rmSync(root, { recursive: true, force: true });
  });

  it.each([
    ['a 4 MiB file onto 1 MiB', 'big', /^Error: the copy stopped at entry "x": ENOSPC: no space left on device/m],
    ['200 files onto 64 inodes', 'many', /^Error: the copy stopped at entry "x\/f\d+": ENOSPC: no space left on device/m],
  ])('%s: exit 125 naming the entry and the disk\'s refusal; the disk as free and the destination as before', async (_what, name, reason) => {
    const disk = freshDisk(name);
    const before = treeListing(disk);
    const free = execFileSync('df', ['--output=used,iused', disk], { encoding: 'utf8' });
    const run = runCli(['--url', crafted.wsUrl, 'cp', `${name}:/x`, join(disk, 'x')], { stdin: 'ignore' });
    const { code } = await run.exited;
    expect(run.stderr).toMatch(reason);
    expect(code).toBe(125);
    expect(treeListing(disk)).toEqual(before);
    expect(readdirSync(disk)).toEqual(['kept']);
    expect(execFileSync('df', ['--output=used,iused', disk], { encoding: 'utf8' })).toBe(free);
  });
});
