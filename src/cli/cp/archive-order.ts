import type { ArchiveTerminalFrame, OutputOf, PathStat, archiveGetContract, archivePutContract } from '../../contracts/index.js';
import { ArchiveRefused } from './refusals.js';

type GetItem = OutputOf<typeof archiveGetContract>;
type PutItem = OutputOf<typeof archivePutContract>;

/** An item of an archive call, once its place is checked. */
export type OrderedItem = { readonly kind: 'stat'; readonly stat: PathStat } | { readonly kind: 'data'; readonly data: Uint8Array } | { readonly kind: 'end'; readonly end: ArchiveTerminalFrame };

/**
 * The order an archive call's items come in (spec §12, ARC-4, ARC-5): a get sends its
 * stat, then tar bytes, then its end; a put sends its end alone; nothing comes after the
 * end. A peer (an engine, an agent, a server) that sends anything else is refused before
 * the item is used: tar bytes before the stat never reach stdout, a second stat never
 * starts a second extraction. No Node API: any client may read an archive call with it.
 */
export class ArchiveOrder {
  private seen: 'nothing' | 'stat' | 'end' = 'nothing';

  private constructor(private readonly direction: 'get' | 'put') {}

  static get(): ArchiveOrder {
    return new ArchiveOrder('get');
  }

  static put(): ArchiveOrder {
    return new ArchiveOrder('put');
  }

  /** What `item` is, if it comes where it may; a refusal otherwise. */
  next(item: GetItem | PutItem): OrderedItem {
    const kind = 'stat' in item ? 'the path\'s stat' : 'data' in item ? 'tar bytes' : 'the copy\'s end';
    if (this.seen === 'end') throw this.refuse(`${kind} after the copy's end`);
    if ('stat' in item) {
      if (this.direction === 'put') throw this.refuse('a stat, which a copy in never has');
      if (this.seen === 'stat') throw this.refuse('a second stat');
      this.seen = 'stat';
      return { kind: 'stat', stat: item.stat };
    }
    if ('data' in item) {
      if (this.direction === 'put') throw this.refuse('tar bytes, which a copy in never answers with');
      if (this.seen === 'nothing') throw this.refuse("tar bytes before the path's stat");
      return { kind: 'data', data: item.data };
    }
    if (this.direction === 'get' && this.seen === 'nothing') throw this.refuse("the copy's end before the path's stat");
    this.seen = 'end';
    return { kind: 'end', end: item };
  }

  private refuse(what: string): ArchiveRefused {
    return new ArchiveRefused(`refused the copy: the server sent ${what} (an archive call is ${this.direction === 'get' ? 'a stat, tar bytes, then its end' : 'its end alone'})`);
  }
}
