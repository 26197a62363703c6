import { posix } from 'node:path';
import { escapeName } from './names.js';
import { ArchiveRefused } from './refusals.js';

export { ArchiveRefused };

/** An archive entry as node-tar reads it: what the guard looks at. */
export interface ArchiveEntry {
  readonly path: string;
  readonly type: string;
  readonly linkpath?: string | undefined;
  readonly size?: number | undefined;
  mode?: number | undefined;
}

/** What a copy writes: files, directories and links. Devices, FIFOs, sparse files are refused. */
const FILE_TYPES = new Set(['File', 'OldFile', 'ContiguousFile']);
const ALLOWED_TYPES = new Set([...FILE_TYPES, 'Directory', 'SymbolicLink', 'Link']);
const SET_ID_BITS = 0o6000;

/**
 * Checks each entry of an archive a container sent before node-tar extracts it
 * (docs/security.md "callwire cp"): names inside the path asked for, nothing written
 * through a symlink the archive made, hard links only to files it already wrote, no
 * type but files, directories and links, and a bound on the bytes. node-tar has checks
 * of its own; these stop the copy with the entry's name instead of skipping it.
 *
 * `top` is the name the archive's entries live under (`.`: the archive is the contents
 * of a directory). Paths it records are relative to the top.
 */
export class EntryGuard {
  private readonly kinds = new Map<string, string>();
  private readonly files = new Set<string>();
  /** Symlinks by path relative to the top, and their targets: made by `StagedExtraction` once every other entry is written, so none exists while the archive is extracted. */
  readonly symlinks = new Map<string, string>();
  /** The mode of each directory, by path relative to the top ('' the top): node-tar gives its directories u+rwx to fill them, they get theirs at the end. */
  readonly directoryModes = new Map<string, number>();
  private entryBytes = 0;
  /** The first refusal; after it every entry is refused. */
  refusal: ArchiveRefused | undefined;

  constructor(
    private readonly top: string,
    private readonly maxBytes: number,
  ) {}

  /**
   * True for node-tar to extract the entry. False for a symlink admitted (kept for the
   * end: node-tar would also strip a leading `/` from its target, where docker cp keeps
   * it) and for a refused entry, which refuses the archive.
   */
  admit(entry: ArchiveEntry): boolean {
    if (this.refusal) return false;
    const reason = this.check(entry);
    if (reason === undefined) return entry.type !== 'SymbolicLink';
    this.refusal = new ArchiveRefused(`refused the archive at entry "${escapeName(entry.path)}": ${reason}`);
    return false;
  }

  private check(entry: ArchiveEntry): string | undefined {
    const raw = entry.path;
    if (raw.includes('\0')) return 'a NUL in its name';
    if (raw.startsWith('/')) return 'an absolute name';
    const segments = raw.split('/').filter((s) => s !== '' && s !== '.');
    if (segments.includes('..')) return 'a ".." in its name';
    if (!ALLOWED_TYPES.has(entry.type)) return `its type, ${entry.type}: a copy holds files, directories and links only`;
    let rel: string[];
    if (this.top === '.') rel = segments;
    else if (segments[0] === this.top) rel = segments.slice(1);
    else return `it is not under "${escapeName(this.top)}", the path copied`;
    const path = rel.join('/');
    if (entry.type === 'SymbolicLink' && (entry.linkpath ?? '') === '') return 'a symlink to nothing';
    if (entry.type === 'SymbolicLink' && entry.linkpath!.includes('\0')) return 'a NUL in its link target';
    // As docker cp: an absolute target is kept as it is, a relative one must stay inside what is copied.
    if (entry.type === 'SymbolicLink' && !entry.linkpath!.startsWith('/') && leavesTree(posix.join(posix.dirname(rel.join('/') || '.'), entry.linkpath!))) {
      return `a symlink to "${escapeName(entry.linkpath!)}", out of the copy`;
    }
    if (path === '' && entry.type !== 'Directory' && this.top === '.') return 'it would replace the destination directory';
    for (let i = 1; i < rel.length; i++) {
      const parent = rel.slice(0, i).join('/');
      if (this.symlinks.has(parent)) return `its path goes through the symlink "${escapeName(parent)}"`;
    }
    const before = this.kinds.get(path);
    const kind = FILE_TYPES.has(entry.type) ? 'File' : entry.type;
    if (before !== undefined && before !== kind) return `it would turn a ${before} already extracted into a ${kind}`;
    if (entry.type === 'Link') {
      const target = entry.linkpath ?? '';
      const targetSegments = target.split('/').filter((s) => s !== '' && s !== '.');
      if (target.startsWith('/') || targetSegments.includes('..')) return `a hard link to "${escapeName(target)}", outside the archive`;
      const targetRel = this.top === '.' ? targetSegments : targetSegments[0] === this.top ? targetSegments.slice(1) : undefined;
      if (targetRel === undefined || !this.files.has(targetRel.join('/'))) return `a hard link to "${escapeName(target)}", which is not a file this archive wrote`;
    }
    this.entryBytes += entry.size ?? 0;
    if (this.entryBytes > this.maxBytes) return `the archive's files add up to more than --max-bytes (${this.maxBytes} bytes)`;
    this.kinds.set(path, kind);
    if (entry.type === 'SymbolicLink') this.symlinks.set(path, entry.linkpath ?? '');
    if (kind === 'File') {
      this.files.add(path);
      // As root, a set-user-ID file from a container would be ours: the bits go.
      if (entry.mode !== undefined) entry.mode &= ~SET_ID_BITS;
    }
    if (entry.type === 'Directory' && entry.mode !== undefined) this.directoryModes.set(path, entry.mode & 0o7777);
    return undefined;
  }
}

/** Whether a path relative to the copy's top, once normalized, climbs out of it. */
function leavesTree(relative: string): boolean {
  const normalized = posix.normalize(relative);
  return normalized === '..' || normalized.startsWith('../');
}
