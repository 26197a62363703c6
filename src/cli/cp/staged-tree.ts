import { chmodSync, closeSync, constants, fchmodSync, futimesSync, linkSync, lstatSync, mkdirSync, openSync, symlinkSync, unlinkSync, write, type Stats } from 'node:fs';
import { join } from 'node:path';
import type { AdmittedEntry } from './entry-guard.js';
import { escapeName } from './names.js';
import { ArchiveRefused } from './refusals.js';

/** Directories known to be real ones (not links) in the staging tree: a cache, so a name's parents are not looked at for every entry. */
const KNOWN_DIRECTORIES = 1024;
/**
 * The most directories whose archive mode denies their owner rwx, which are made u+rwx
 * to be filled and given their mode once the copy is in place: the one thing remembered
 * per entry, so a bound on it is the last line against an archive made of nothing else.
 */
export const MAX_DEFERRED_MODES = 100_000;
/** A directory made as the parent of a name before (or without) its own entry, as docker's extraction makes it. */
const IMPLICIT_DIRECTORY_MODE = 0o755;
const CREATE_FILE = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;

/** A kind as the refusals name it, from what is on disk or in the archive. */
type Kind = 'Directory' | 'File' | 'SymbolicLink' | 'other';

function kindOf(stat: Stats): Kind {
  return stat.isDirectory() ? 'Directory' : stat.isFile() ? 'File' : stat.isSymbolicLink() ? 'SymbolicLink' : 'other';
}

const ENTRY_KIND: Record<AdmittedEntry['kind'], Kind> = { directory: 'Directory', file: 'File', hardlink: 'File', symlink: 'SymbolicLink' };

function lstatOrNothing(path: string): Stats | undefined {
  try {
    return lstatSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

/**
 * The staging directory, written one admitted entry at a time, in the archive's order:
 * the tree on disk is the only record of what the archive made, so nothing is kept per
 * entry. No entry is ever written through a symlink (each parent is looked at, and a
 * directory once seen can never become anything else: a kind never changes), a file is
 * created with O_EXCL|O_NOFOLLOW, a hard link must name a regular file already here,
 * and an entry that would turn one kind into another is refused by name.
 *
 * `base` is the staging directory; `top` the name the entries live under in it (`.`:
 * the staging directory itself, whose own mode is kept for the end).
 */
export class StagedTree {
  private readonly knownDirectories = new Set<string>();
  /** Modes of directories made u+rwx to be filled, by path relative to the top ('' the top): given once the copy is in place. */
  readonly deferredModes = new Map<string, number>();

  constructor(
    private readonly base: string,
    private readonly top: string,
  ) {}

  /** Where `rel` (relative to the top) is on disk. */
  pathOf(rel: string): string {
    const underBase = this.top === '.' ? rel : rel === '' ? this.top : `${this.top}/${rel}`;
    return underBase === '' ? this.base : join(this.base, underBase);
  }

  /** Makes `entry`; a file's bytes come from `body`. Throws ArchiveRefused for an entry the tree refuses. */
  async make(entry: AdmittedEntry, name: string, body: AsyncIterable<Uint8Array>, mtime: Date | undefined): Promise<void> {
    const refuse = (reason: string): ArchiveRefused => new ArchiveRefused(`refused the archive at entry "${escapeName(name)}": ${reason}`);
    const at = this.pathOf(entry.rel);
    if (at !== this.base) this.parents(entry.rel, refuse, true);
    // Made at once where nothing is (one call per entry, most often); what is there is looked at only when something is.
    const over = (make: () => void, replace: boolean): void => {
      try {
        make();
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
        const there = kindOf(lstatSync(at));
        if (there !== ENTRY_KIND[entry.kind]) throw refuse(`it would turn a ${there} already extracted into a ${ENTRY_KIND[entry.kind]}`);
        if (!replace) return;
        unlinkSync(at);
        make();
      }
    };
    switch (entry.kind) {
      case 'directory':
        over(() => mkdirSync(at, 0o700), false);
        return this.directoryMode(entry.rel, at, entry.mode);
      case 'file': {
        let fd = -1;
        over(() => (fd = openSync(at, CREATE_FILE, 0o600)), true);
        return writeFile(fd, entry.mode, body, mtime);
      }
      case 'hardlink': {
        const target = this.pathOf(entry.target);
        const notOurs = (): ArchiveRefused => refuse(`a hard link to "${escapeName(entry.target)}", which is not a file this archive wrote`);
        this.parents(entry.target, notOurs, false);
        if (target === at || !lstatOrNothing(target)?.isFile()) throw notOurs();
        return over(() => linkSync(target, at), true);
      }
      case 'symlink':
        return over(() => symlinkSync(entry.target, at), true);
    }
  }

  /**
   * Each parent of `rel` is a real directory of the staging tree, made (0755, `create`)
   * where the archive has none yet; a symlink, a file or nothing there refuses the entry.
   */
  private parents(rel: string, refuse: (reason: string) => ArchiveRefused, create: boolean): void {
    const segments = rel === '' ? [] : rel.split('/');
    const parentCount = this.top === '.' ? segments.length - 1 : segments.length;
    const named = this.top === '.' ? segments : [this.top, ...segments];
    let from = parentCount;
    while (from > 0 && !this.knownDirectories.has(named.slice(0, from).join('/'))) from--;
    for (let i = from + 1; i <= parentCount; i++) {
      const path = named.slice(0, i).join('/');
      const at = join(this.base, path);
      const there = lstatOrNothing(at);
      if (there === undefined && create) mkdirSync(at, IMPLICIT_DIRECTORY_MODE);
      else if (there === undefined) throw refuse(`"${escapeName(path)}" is not there`);
      else if (there.isSymbolicLink()) throw refuse(`its path goes through the symlink "${escapeName(this.top === '.' ? path : path.slice(this.top.length + 1) || this.top)}"`);
      else if (!there.isDirectory()) throw refuse(`its path goes through "${escapeName(path)}", which is not a directory`);
      this.remember(path);
    }
  }

  private remember(path: string): void {
    if (this.knownDirectories.size >= KNOWN_DIRECTORIES) this.knownDirectories.delete(this.knownDirectories.values().next().value!);
    this.knownDirectories.add(path);
  }

  /**
   * A directory's archive mode, exact: now, when its owner may still fill it; else at the
   * end (deferredModes), as the staging directory's own (the top of a `.` copy) always is.
   */
  private directoryMode(rel: string, at: string, mode: number): void {
    if (at === this.base || (mode & 0o700) !== 0o700) {
      if (!this.deferredModes.has(rel) && this.deferredModes.size >= MAX_DEFERRED_MODES) {
        throw new ArchiveRefused(`refused the archive: more than ${MAX_DEFERRED_MODES} directories whose owner may not write them (a bound on what a copy remembers)`);
      }
      this.deferredModes.set(rel, mode);
      if (at !== this.base) chmodSync(at, 0o700 | mode);
      return;
    }
    this.deferredModes.delete(rel);
    chmodSync(at, mode);
  }
}

/**
 * The archive's bytes into a file just made (never through a link, never over anything),
 * then its exact mode and mtime. The bytes are written off the event loop, so the disk
 * works while the next item is decoded and hashed; the calls about names are made on it,
 * where each takes microseconds and a trip to the thread pool would be most of the cost
 * of a small file.
 */
async function writeFile(fd: number, mode: number, body: AsyncIterable<Uint8Array>, mtime: Date | undefined): Promise<void> {
  try {
    for await (const chunk of body) {
      let written = 0;
      while (written < chunk.byteLength) written += await writeSome(fd, chunk, written);
    }
    fchmodSync(fd, mode);
    if (mtime !== undefined) futimesSync(fd, mtime, mtime);
  } finally {
    closeSync(fd);
  }
}

function writeSome(fd: number, chunk: Uint8Array, offset: number): Promise<number> {
  return new Promise((resolve, reject) => write(fd, chunk, offset, (error, written) => (error ? reject(error) : resolve(written))));
}
