import type { Stats } from 'node:fs';
import { chmod, lstat, mkdtemp, opendir, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { CopyError } from './rules.js';
import { escapeName } from './names.js';

/** The prefix of a staging directory: beside the destination, so moving it in is a rename on one filesystem. */
export const STAGING_PREFIX = '.callwire-cp-';

/** A fresh staging directory (mode 0700) in `dir`. */
export function createStaging(dir: string): Promise<string> {
  return mkdtemp(join(dir, STAGING_PREFIX));
}

export function removeStaging(path: string): Promise<void> {
  return rm(path, { recursive: true, force: true });
}

async function lstatOrNothing(path: string): Promise<Stats | undefined> {
  return lstat(path).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return undefined;
    throw error;
  });
}

/**
 * Moves `staged` to `target` as docker cp's extraction would have left it: a new name is
 * one rename; a directory onto a directory merges, entry by entry, the archive's mode
 * given to each directory merged into (but the top's with `keepRoot`); a file onto a
 * file replaces it (atomically, by rename); a directory onto a non-directory or the
 * reverse is refused (docker's NoOverwriteDirNonDir). A symlink at the target is never
 * followed: it is a non-directory like any other.
 *
 * Every refusal is found before the first move: a merge is walked once to check it,
 * then once to do it, so a refused merge leaves the destination as it was.
 */
export async function moveInto(staged: string, target: string, keepRoot: boolean): Promise<void> {
  await merge(staged, target, 'check', keepRoot);
  await merge(staged, target, 'move', keepRoot);
}

async function merge(staged: string, target: string, pass: 'check' | 'move', keepMode: boolean): Promise<void> {
  const there = await lstatOrNothing(target);
  if (there === undefined) {
    if (pass === 'move') await rename(staged, target);
    return;
  }
  const mine = await lstatOrNothing(staged);
  // Gone from the staging tree while it was walked: moved already (a directory read while its entries leave it may name one twice).
  if (mine === undefined) return;
  if (mine.isDirectory() && there.isDirectory()) {
    for await (const entry of await opendir(staged)) await merge(join(staged, entry.name), join(target, entry.name), pass, false);
    if (pass === 'move' && !keepMode) await chmod(target, mine.mode & 0o7777);
    return;
  }
  if (mine.isDirectory() || there.isDirectory()) {
    throw new CopyError(`cannot overwrite ${there.isDirectory() ? 'directory' : 'non-directory'} "${escapeName(target)}" with ${mine.isDirectory() ? 'a directory' : 'a non-directory'}`);
  }
  if (pass === 'move') await rename(staged, target);
}

/** Gives each directory whose mode was kept for the end its archive mode, deepest first (a 0555 directory is filled before it closes). */
export async function applyDirectoryModes(root: string, modes: ReadonlyMap<string, number>, skipRoot: boolean): Promise<void> {
  const paths = [...modes.keys()].sort((a, b) => b.split('/').length - a.split('/').length);
  for (const rel of paths) {
    if (rel === '' && skipRoot) continue;
    await chmod(rel === '' ? root : join(root, rel), modes.get(rel)!);
  }
}
