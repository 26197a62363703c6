import { lstat, realpath, stat } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { CopyError, specifiesCurrentDir, type DestinationInfo } from './rules.js';
import { escapeName } from './names.js';

/** An absolute local path that keeps the caller's trailing `/` or `/.` (docker's PreserveTrailingDotOrSeparator). */
export function absoluteLocal(path: string): string {
  const abs = resolve(path);
  if (specifiesCurrentDir(path)) return abs === '/' ? '/.' : `${abs}/.`;
  if (path.endsWith('/') && abs !== '/') return `${abs}/`;
  return abs;
}

/**
 * What is at a local destination (CopyInfoDestinationPath): a symlink there is followed
 * to what it names, as docker cp does; a missing destination needs its parent.
 */
export async function localDestination(path: string): Promise<DestinationInfo> {
  const there = await lstat(path).catch(() => undefined);
  if (there === undefined) {
    const parent = dirname(path.replace(/\/\.?$/, '') || '/');
    const parentStat = await stat(parent).catch(() => undefined);
    if (!parentStat?.isDirectory()) throw new CopyError(`no such directory: ${escapeName(parent)} (the destination's parent must exist)`);
    return { path, exists: false, isDir: false };
  }
  if (there.isSymbolicLink()) {
    const target = await realpath(path).catch(() => undefined);
    if (target === undefined) throw new CopyError(`the destination ${escapeName(path)} is a symlink to nothing`);
    return { path: target, exists: true, isDir: (await stat(target)).isDirectory() };
  }
  if (!there.isDirectory() && !there.isFile()) throw new CopyError(`the destination ${escapeName(path)} must be a directory or a regular file`);
  return { path, exists: true, isDir: there.isDirectory() };
}
