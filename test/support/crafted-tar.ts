import { Header } from 'tar';

/** One entry of a crafted archive: any name, type and link target, as a hostile sender writes them. */
export interface CraftedEntry {
  readonly path: string;
  readonly type: 'File' | 'Directory' | 'SymbolicLink' | 'Link' | 'CharacterDevice' | 'BlockDevice' | 'FIFO' | 'SparseFile';
  readonly body?: string;
  /** The size the header claims, when it is not the body's. */
  readonly size?: number;
  readonly linkpath?: string;
  readonly mode?: number;
}

/**
 * A tar stream built header by header with node-tar's Header (ustar, names under 100
 * bytes): the archives a hostile engine or agent would send, which no honest packer makes.
 */
export function craftedTar(entries: readonly CraftedEntry[]): Buffer {
  const blocks: Buffer[] = [];
  for (const entry of entries) {
    const body = Buffer.from(entry.body ?? '');
    const header = new Header({
      path: entry.path,
      type: entry.type,
      size: entry.size ?? body.byteLength,
      mode: entry.mode ?? (entry.type === 'Directory' ? 0o755 : 0o644),
      mtime: new Date(1_700_000_000_000),
      uid: 0,
      gid: 0,
      ...(entry.linkpath === undefined ? {} : { linkpath: entry.linkpath }),
    });
    const block = Buffer.alloc(512);
    header.encode(block);
    blocks.push(block);
    if (body.byteLength > 0) blocks.push(body, Buffer.alloc((512 - (body.byteLength % 512)) % 512));
  }
  blocks.push(Buffer.alloc(1024));
  return Buffer.concat(blocks);
}
