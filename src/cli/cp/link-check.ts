import { createReadStream } from 'node:fs';
import { lstat, open, readlink, type FileHandle } from 'node:fs/promises';
import { escapeName } from './names.js';
import { ArchiveRefused } from './refusals.js';

/** Linux's own bound on the links one name may go through (MAXSYMLINKS). */
const MAX_HOPS = 40;

/**
 * Every symlink an archive made, checked once the whole archive is in the staging tree
 * (docs/security.md "Copies", links): a relative target is resolved the way the kernel
 * would, through the links the archive made, and must stay inside the copy. A `..`
 * climbs only out of a directory the archive made: after a name that is missing, a file
 * or outside, where the kernel would go cannot be shown, so the link is refused. An
 * absolute target is data, as docker cp keeps it; so is a chain that reaches one.
 *
 * The paths of the links go to a file beside the tree as they are made and are read
 * back one at a time: a copy remembers nothing per link.
 */
export class LinkJournal {
  private constructor(
    private readonly path: string,
    private readonly handle: FileHandle,
  ) {}

  static async create(path: string): Promise<LinkJournal> {
    return new LinkJournal(path, await open(path, 'wx', 0o600));
  }

  /** A symlink made at `rel` (relative to the copy's top; no NUL, which the guard refuses). */
  async add(rel: string): Promise<void> {
    await this.handle.write(`${rel}\0`);
  }

  async close(): Promise<void> {
    await this.handle.close().catch(() => undefined);
  }

  /** Refuses the archive at the first link that leads out of the copy; `pathOf` gives where a path relative to the top is on disk. */
  async check(pathOf: (rel: string) => string): Promise<void> {
    await this.close();
    let carry = '';
    for await (const chunk of createReadStream(this.path, { encoding: 'utf8' }) as AsyncIterable<string>) {
      const records = (carry + chunk).split('\0');
      carry = records.pop()!;
      for (const rel of records) await checkLink(rel, pathOf);
    }
  }
}

async function checkLink(rel: string, pathOf: (rel: string) => string): Promise<void> {
  // The top itself: a copy of one symlink, whose target the guard held to the destination directory.
  if (rel === '') return;
  const at = pathOf(rel);
  const stat = await lstat(at).catch(() => undefined);
  // Replaced by a later entry of the archive: that entry is what is checked.
  if (!stat?.isSymbolicLink()) return;
  const target = await readlink(at);
  if (target.startsWith('/')) return;
  const reason = await leadsOut(rel.split('/').slice(0, -1), target, pathOf);
  if (reason !== undefined) throw new ArchiveRefused(`refused the archive at the symlink "${escapeName(rel)}" -> "${escapeName(target)}": ${reason}`);
}

/**
 * Why `target`, followed from the directory `from` (segments under the top), leads out
 * of the copy or cannot be shown to stay in it; undefined when it stays inside.
 */
async function leadsOut(from: string[], target: string, pathOf: (rel: string) => string): Promise<string | undefined> {
  const at = [...from];
  /** Whether `at` is a directory the archive made, all the way down (else a `..` cannot be resolved here). */
  let solid = true;
  let hops = 0;
  const rest = target.split('/');
  while (rest.length > 0) {
    const name = rest.shift()!;
    if (name === '' || name === '.') continue;
    if (name === '..') {
      if (!solid) return `its ".." follows "${escapeName(at.join('/'))}", which is not a directory of the copy, so where it leads cannot be shown`;
      if (at.length === 0) return 'it leads out of the copy';
      at.pop();
      continue;
    }
    if (!solid) {
      at.push(name);
      continue;
    }
    const path = pathOf([...at, name].join('/'));
    const stat = await lstat(path).catch(() => undefined);
    if (stat?.isSymbolicLink()) {
      if (++hops > MAX_HOPS) return `it goes through more than ${MAX_HOPS} links`;
      const next = await readlink(path);
      // A chain that reaches an absolute target ends there, as an absolute link is kept.
      if (next.startsWith('/')) return undefined;
      rest.unshift(...next.split('/'));
      continue;
    }
    at.push(name);
    solid = stat?.isDirectory() === true;
  }
  return undefined;
}
