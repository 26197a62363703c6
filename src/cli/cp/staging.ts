import { chmod, lstat, mkdtemp, readdir, rename, rm, rmdir } from 'node:fs/promises';
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

/**
 * Moves `staged` to `target` as docker cp's extraction would have left it: a new name is
 * one rename; a directory onto a directory merges, entry by entry; a file onto a file
 * replaces it (atomically, by rename); a directory onto a non-directory or the reverse
 * is refused (docker's NoOverwriteDirNonDir). A symlink at the target is never followed.
 */
export async function moveInto(staged: string, target: string): Promise<void> {
  const there = await lstat(target).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return undefined;
    throw error;
  });
  if (there === undefined) return rename(staged, target);
  const mine = await lstat(staged);
  if (mine.isDirectory() && there.isDirectory()) {
    for (const name of await readdir(staged)) await moveInto(join(staged, name), join(target, name));
    await rmdir(staged);
    return;
  }
  if (mine.isDirectory() || there.isDirectory()) {
    throw new CopyError(`cannot overwrite ${there.isDirectory() ? 'directory' : 'non-directory'} "${escapeName(target)}" with ${mine.isDirectory() ? 'a directory' : 'a non-directory'}`);
  }
  await rename(staged, target);
}

/** Gives each directory its archive mode, deepest first (a 0555 directory is filled before it closes). */
export async function applyDirectoryModes(root: string, modes: ReadonlyMap<string, number>, skipRoot: boolean): Promise<void> {
  const paths = [...modes.keys()].sort((a, b) => b.split('/').length - a.split('/').length);
  for (const rel of paths) {
    if (rel === '' && skipRoot) continue;
    await chmod(rel === '' ? root : join(root, rel), modes.get(rel)!);
  }
}
