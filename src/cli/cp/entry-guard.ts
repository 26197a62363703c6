import { posix } from 'node:path';
import { escapeName } from './names.js';
import { ArchiveRefused } from './refusals.js';

/** An archive entry as node-tar reads it: what the guard looks at. */
export interface ArchiveEntry {
  readonly path: string;
  readonly type: string;
  readonly linkpath?: string | undefined;
  readonly size?: number | undefined;
  readonly mode?: number | undefined;
}

/** An entry the guard admitted: what to make, where under the copy's top, with what mode. */
export type AdmittedEntry =
  | { readonly kind: 'directory'; readonly rel: string; readonly mode: number }
  | { readonly kind: 'file'; readonly rel: string; readonly mode: number }
  /** A hard link to `target`, a path relative to the top. */
  | { readonly kind: 'hardlink'; readonly rel: string; readonly target: string }
  /** A symlink to `target`, as the archive names it. */
  | { readonly kind: 'symlink'; readonly rel: string; readonly target: string };

/** What a copy writes: files, directories and links. Devices, FIFOs, sparse files are refused. */
const FILE_TYPES = new Set(['File', 'OldFile', 'ContiguousFile']);
const SET_ID_BITS = 0o6000;
/** node-tar's own bound on a name's depth, kept: deeper names are refused, not walked. */
const MAX_DEPTH = 1024;

/**
 * Checks each entry of an archive a container sent, by its header alone, before anything
 * is written (docs/security.md "Copies"): names inside the path asked for, no type but
 * files, directories and links, links that do not name their way out, and a bound on
 * the bytes. What needs the tree (a path through a symlink, a kind changed, where a
 * chain of links leads) is checked against the staging directory itself (staged-tree.ts,
 * link-check.ts): nothing is kept per entry, so a copy's memory does not grow with them.
 *
 * `top` is the name the archive's entries live under (`.`: the archive is the contents
 * of a directory). Paths it gives are relative to the top.
 */
export class EntryGuard {
  private entryBytes = 0;

  constructor(
    private readonly top: string,
    private readonly maxBytes: number,
  ) {}

  /** The entry to make, or a refusal naming it. */
  admit(entry: ArchiveEntry): AdmittedEntry {
    const admitted = this.check(entry);
    if (typeof admitted === 'string') throw new ArchiveRefused(`refused the archive at entry "${escapeName(entry.path)}": ${admitted}`);
    return admitted;
  }

  private check(entry: ArchiveEntry): AdmittedEntry | string {
    const rel = this.relative(entry.path);
    if (typeof rel !== 'string') return rel.reason;
    const mode = (entry.mode ?? 0o644) & 0o7777;
    if (rel === '' && entry.type !== 'Directory' && this.top === '.') return 'it would replace the destination directory';
    this.entryBytes += entry.size ?? 0;
    if (this.entryBytes > this.maxBytes) return `the archive's files add up to more than --max-bytes (${this.maxBytes} bytes)`;
    if (entry.type === 'Directory') return { kind: 'directory', rel, mode };
    // As root, a set-user-ID file from a container would be ours: the bits go.
    if (FILE_TYPES.has(entry.type)) return { kind: 'file', rel, mode: mode & ~SET_ID_BITS };
    if (entry.type === 'SymbolicLink') {
      const target = entry.linkpath ?? '';
      if (target === '') return 'a symlink to nothing';
      if (target.includes('\0')) return 'a NUL in its link target';
      // As docker cp: an absolute target is kept as it is, a relative one must stay inside what is copied.
      if (!target.startsWith('/') && leavesTree(posix.join(posix.dirname(rel || '.'), target))) return `a symlink to "${escapeName(target)}", out of the copy`;
      return { kind: 'symlink', rel, target };
    }
    if (entry.type === 'Link') {
      const target = entry.linkpath ?? '';
      const targetRel = target.startsWith('/') ? undefined : this.relative(target);
      if (targetRel === undefined || typeof targetRel !== 'string') return `a hard link to "${escapeName(target)}", outside the archive`;
      return { kind: 'hardlink', rel, target: targetRel };
    }
    return `its type, ${entry.type}: a copy holds files, directories and links only`;
  }

  /** A name in the archive as a path relative to the top, or why it is none. */
  private relative(raw: string): string | { reason: string } {
    if (raw.includes('\0')) return { reason: 'a NUL in its name' };
    if (raw.startsWith('/')) return { reason: 'an absolute name' };
    const segments = raw.split('/').filter((s) => s !== '' && s !== '.');
    if (segments.includes('..')) return { reason: 'a ".." in its name' };
    if (segments.length > MAX_DEPTH) return { reason: `a name deeper than ${MAX_DEPTH} directories` };
    if (this.top === '.') return segments.join('/');
    if (segments[0] !== this.top) return { reason: `it is not under "${escapeName(this.top)}", the path copied` };
    return segments.slice(1).join('/');
  }
}

/** Whether a path relative to the copy's top, once normalized, climbs out of it. */
function leavesTree(relative: string): boolean {
  const normalized = posix.normalize(relative);
  return normalized === '..' || normalized.startsWith('../');
}
