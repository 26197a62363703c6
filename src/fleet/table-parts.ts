import { ASSEMBLY_MS, MAX_ASSEMBLING_BYTES, MAX_LABEL_BYTES_PER_HOST, MAX_TABLE_BYTES, MAX_TABLE_ENTRIES } from './beat-gate.js';
import { labelBytes, type Beat, type RoutedContainer } from './beat.js';

interface Assembling {
  startedAt: number;
  version: number;
  parts: number;
  got: Map<number, readonly RoutedContainer[]>;
  entries: number;
  bytes: number;
  labelBytes: number;
  since: number;
  /** Over a bound: its further parts are ignored until a newer table replaces it. */
  refused: boolean;
}

/** What a beat's table part came to. */
export type Offered =
  | { readonly kind: 'table'; readonly containers: RoutedContainer[] }
  | { readonly kind: 'waiting' }
  | { readonly kind: 'refused'; readonly why: string };

/**
 * The gateway's tables in parts (docs/fleet.md "Security"): a host's table of several
 * beats is applied only whole, its parts kept by number until then, within bounds per
 * host and for all hosts together, so that a partial table never replaces the last
 * complete one, a host that never completes its table holds nothing for long, and hosts
 * that fill the room for all leave each other host an equal share of it.
 */
export class TableParts {
  private readonly hosts = new Map<string, Assembling>();
  private assemblingBytes = 0;

  /** The bytes of every table now waiting for parts. */
  get bytes(): number {
    return this.assemblingBytes;
  }

  /** `host`'s beat with a table (or a part of one) of `bytes` on the wire; a beat without one is not offered. */
  offer(host: string, beat: Beat, bytes: number, now = Date.now()): Offered {
    const containers = beat.containers ?? [];
    const parts = beat.parts ?? 1;
    let assembling = this.hosts.get(host);
    if (assembling && (assembling.startedAt !== beat.startedAt || assembling.version < beat.version || now - assembling.since > ASSEMBLY_MS)) {
      this.drop(host, assembling);
      assembling = undefined;
    }
    if (parts === 1) {
      // A whole table: newer than any in assembly (an older one is stale, and so is its part).
      if (assembling && assembling.version > beat.version) return { kind: 'refused', why: 'a newer table is being assembled' };
      if (assembling) this.drop(host, assembling);
      const labels = containers.reduce((sum, c) => sum + (c.labels ? labelBytes(c.labels) : 0), 0);
      if (labels > MAX_LABEL_BYTES_PER_HOST) return { kind: 'refused', why: `labels of ${labels} bytes, over ${MAX_LABEL_BYTES_PER_HOST}` };
      return { kind: 'table', containers };
    }
    const part = beat.part ?? 0;
    if (part >= parts) return { kind: 'refused', why: `part ${part} of ${parts}` };
    if (assembling && assembling.version > beat.version) return { kind: 'refused', why: 'a part of an older table' };
    if (!assembling) {
      assembling = { startedAt: beat.startedAt, version: beat.version, parts, got: new Map(), entries: 0, bytes: 0, labelBytes: 0, since: now, refused: false };
      this.hosts.set(host, assembling);
    }
    if (assembling.refused) return { kind: 'refused', why: 'its table is over a bound' };
    if (assembling.parts !== parts) return { kind: 'refused', why: `a part of ${parts} in a table of ${assembling.parts}` };
    if (assembling.got.has(part)) return { kind: 'waiting' };
    const labels = containers.reduce((sum, c) => sum + (c.labels ? labelBytes(c.labels) : 0), 0);
    const over = this.overBound(host, assembling, containers.length, bytes, labels, now);
    if (over) {
      if (over.lasting) {
        this.drop(host, assembling);
        this.hosts.set(host, { ...assembling, got: new Map(), entries: 0, bytes: 0, labelBytes: 0, refused: true });
      }
      return { kind: 'refused', why: over.why };
    }
    assembling.got.set(part, containers);
    assembling.entries += containers.length;
    assembling.bytes += bytes;
    assembling.labelBytes += labels;
    this.assemblingBytes += bytes;
    if (assembling.got.size < assembling.parts) return { kind: 'waiting' };
    this.drop(host, assembling);
    const whole: RoutedContainer[] = [];
    for (let i = 0; i < assembling.parts; i++) for (const c of assembling.got.get(i) ?? []) whole.push(c);
    return { kind: 'table', containers: whole };
  }

  /** Why this part of `host`'s may not be kept; `lasting` when its whole table is over a bound (not just the room now). */
  private overBound(host: string, assembling: Assembling, entries: number, bytes: number, labels: number, now: number): { why: string; lasting: boolean } | undefined {
    if (assembling.entries + entries > MAX_TABLE_ENTRIES) return { why: `over ${MAX_TABLE_ENTRIES} containers`, lasting: true };
    if (assembling.bytes + bytes > MAX_TABLE_BYTES) return { why: `over ${MAX_TABLE_BYTES} bytes`, lasting: true };
    if (assembling.labelBytes + labels > MAX_LABEL_BYTES_PER_HOST) return { why: `labels over ${MAX_LABEL_BYTES_PER_HOST} bytes`, lasting: true };
    if (this.assemblingBytes + bytes > MAX_ASSEMBLING_BYTES) this.evictStale(now);
    // Room is made by the host holding the most, and only when it holds more than this one would: each host
    // assembling may count on an equal share of the room, however many others (colluding, say) fill it.
    while (this.assemblingBytes + bytes > MAX_ASSEMBLING_BYTES) {
      const largest = this.largestBesides(host);
      if (!largest || largest.assembling.bytes <= assembling.bytes + bytes) return { why: `the tables in assembly are at their ${MAX_ASSEMBLING_BYTES} bytes`, lasting: false };
      this.drop(largest.host, largest.assembling);
    }
    return undefined;
  }

  /** The table in assembly of the most bytes, another host's than `host`. */
  private largestBesides(host: string): { host: string; assembling: Assembling } | undefined {
    let largest: { host: string; assembling: Assembling } | undefined;
    for (const [other, assembling] of this.hosts) if (other !== host && assembling.bytes > (largest?.assembling.bytes ?? 0)) largest = { host: other, assembling };
    return largest;
  }

  /** A host gone or restarted: its table in assembly with it. */
  forget(host: string): void {
    const assembling = this.hosts.get(host);
    if (assembling) this.drop(host, assembling);
  }

  private evictStale(now: number): void {
    for (const [host, assembling] of this.hosts) if (now - assembling.since > ASSEMBLY_MS) this.drop(host, assembling);
  }

  private drop(host: string, assembling: Assembling): void {
    this.assemblingBytes -= assembling.bytes;
    this.hosts.delete(host);
  }
}
