import { posix } from 'node:path';

/**
 * docker cp's path rules (moby's pkg/archive copy.go: SplitPathDirEntry, GetRebaseName,
 * PrepareArchiveCopy), restated for callwire cp: what a trailing `/` or `/.` asks for,
 * and where a source lands given what exists at the destination. Pure: no I/O.
 */

/** A copy refused by the rules or by what is at a path; exit as an operation failure. */
export class CopyError extends Error {
  override readonly name = 'CopyError';
}

/** Go's filepath.Clean on a slash path: no `.` segments, no trailing slash (but `/`). */
export function cleanPath(path: string): string {
  const normal = posix.normalize(path);
  return normal.length > 1 && normal.endsWith('/') ? normal.slice(0, -1) : normal;
}

/** The path names "the contents of" a directory: it ends in `/.`. */
export const specifiesCurrentDir = (path: string): boolean => posix.basename(path) === '.';
export const hasTrailingSeparator = (path: string): boolean => path.endsWith('/');
/** The caller says the destination is a directory: a trailing `/` or `/.`. */
export const assertsDirectory = (path: string): boolean => hasTrailingSeparator(path) || specifiesCurrentDir(path);

/** The parent and the last element; `/.` keeps `.` as the last element (SplitPathDirEntry). */
export function splitDirEntry(path: string): { dir: string; base: string } {
  let cleaned = cleanPath(path);
  if (specifiesCurrentDir(path)) cleaned = cleaned === '/' ? '/.' : `${cleaned}/.`;
  const base = posix.basename(cleaned);
  return { dir: posix.dirname(cleaned), base: base === '' ? '.' : base };
}

/**
 * A symlink followed (-L): the path copied is its target, under the link's own name
 * when the two differ (GetRebaseName). A `/.` or trailing `/` of the link carries over.
 */
export function rebaseOf(path: string, resolved: string): { resolved: string; rebaseName?: string } {
  let out = resolved;
  if (specifiesCurrentDir(path) && !specifiesCurrentDir(out)) out += '/.';
  if (hasTrailingSeparator(path) && !hasTrailingSeparator(out)) out += '/';
  const name = splitDirEntry(path).base;
  return name === splitDirEntry(out).base ? { resolved: out } : { resolved: out, rebaseName: name };
}

export interface SourceInfo {
  /** The path as the archive is made of it (after -L, the link's target). */
  readonly path: string;
  readonly isDir: boolean;
  /** The name the source's top takes instead of its own (-L). */
  readonly rebaseName?: string;
}

export interface DestinationInfo {
  readonly path: string;
  readonly exists: boolean;
  readonly isDir: boolean;
}

/**
 * Where the archive is extracted and what its top entry is named there
 * (PrepareArchiveCopy): `name` `.` puts the source's contents into `dir` itself.
 */
export interface Placement {
  readonly dir: string;
  readonly name: string;
}

export function placeCopy(src: SourceInfo, dst: DestinationInfo): Placement {
  const { dir: dstDir, base: dstBase } = splitDirEntry(dst.path);
  const srcName = src.rebaseName ?? splitDirEntry(src.path).base;
  // An existing directory takes the source as it is named, or its contents for `/.`.
  if (dst.exists && dst.isDir) return { dir: dst.path, name: srcName };
  if (dst.exists && src.isDir) throw new CopyError(`cannot copy a directory to a file: ${dst.path} exists and is not a directory`);
  // A file source to a path said to be a directory that is not there: docker cp's ErrDirNotExists.
  if (!dst.exists && !src.isDir && assertsDirectory(dst.path)) throw new CopyError(`no such directory: ${dst.path} (a trailing / asks for an existing directory)`);
  // Otherwise the source takes the destination's name, in its parent.
  return { dir: dstDir, name: dstBase };
}
