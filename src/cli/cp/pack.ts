import { lstat, realpath } from 'node:fs/promises';
import { posix } from 'node:path';
import { Pack, type WriteEntry } from 'tar';
import { CopyError, rebaseOf, splitDirEntry, type SourceInfo } from './rules.js';
import { escapeName } from './names.js';

/** The largest data item sent: the call's input window is 1 MiB, and smaller items keep it moving. */
const ITEM_BYTES = 256 * 1024;

/**
 * A local source as docker cp sees it (CopyInfoSourcePath, ResolveHostSourcePath): its
 * parent's symlinks resolved; with -L (`followLink`) the path itself too, copied under
 * its own name.
 */
export async function localSource(path: string, followLink: boolean): Promise<SourceInfo> {
  let resolved: string;
  let rebaseName: string | undefined;
  try {
    if (followLink) {
      ({ resolved, rebaseName } = rebaseOf(path, await realpath(path)));
    } else {
      const { dir, base } = splitDirEntry(path);
      resolved = posix.join(await realpath(dir), base);
      if (path.endsWith('/') && posix.basename(path) !== posix.basename(resolved)) rebaseName = posix.basename(path);
    }
    const stat = await lstat(resolved);
    return { path: resolved, isDir: stat.isDirectory(), ...(rebaseName === undefined ? {} : { rebaseName }) };
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') throw new CopyError(`no such file or directory: ${escapeName(path)}`);
    throw error;
  }
}

/**
 * The tar stream of `source`, its top entry named `name` (`.`: the directory's contents
 * at the top), packed by node-tar without following symlinks (a -L source is already
 * resolved), owners kept for `-a`; as data items of at most 256 KiB.
 */
export async function* packSource(source: SourceInfo, name: string): AsyncGenerator<Uint8Array> {
  const { dir, base } = splitDirEntry(source.path);
  const pack = new Pack({
    cwd: dir,
    follow: false,
    portable: false,
    maxReadSize: ITEM_BYTES,
    onWriteEntry: (entry: WriteEntry) => {
      entry.path = renamed(entry.path, base, name);
      if (entry.type === 'Link' && entry.linkpath) entry.linkpath = renamed(entry.linkpath, base, name);
    },
  });
  pack.end(base);
  for await (const chunk of pack as AsyncIterable<Buffer>) {
    for (let at = 0; at < chunk.byteLength; at += ITEM_BYTES) yield chunk.subarray(at, at + ITEM_BYTES);
  }
}

/** `path` (under `base`, as node-tar names it) under `name` instead. */
function renamed(path: string, base: string, name: string): string {
  const rest = base === '.' ? path.replace(/^\.\/?/, '') : path.slice(base.length).replace(/^\//, '');
  if (name === '.') return rest === '' ? './' : rest;
  return rest === '' ? (path.endsWith('/') ? `${name}/` : name) : `${name}/${rest}`;
}
