/**
 * What a gateway takes from one host's heartbeats (docs/fleet.md "Limits"), decided on
 * the message's size alone, before a byte of it is parsed: a host's NATS user can
 * publish its beat subject as fast and as large as NATS lets it, and each table the
 * gateway parses costs it CPU that every other host's calls wait behind. A host beats
 * once a second and sends its table when it changed or was asked, so these bounds leave
 * an honest host alone; a dropped table costs nothing lasting (its next beat shows a
 * version ahead, and the gateway asks for the table again).
 */

/** A beat larger than this is dropped unread: its table cannot fit NATS's default max_payload anyway. */
export const MAX_BEAT_BYTES = 1024 * 1024;
/** Containers in one host's table: more and the beat is ignored (the host is reachable as HOST/NAME only). */
export const MAX_TABLE_ENTRIES = 10_000;
/** Parts of one host's table, and the bytes of their messages together (docs/fleet.md "Security"). */
export const MAX_TABLE_PARTS = 64;
export const MAX_TABLE_BYTES = 16 * 1024 * 1024;
/** All hosts' tables still missing parts, together; and how long one may wait for its last part. */
export const MAX_ASSEMBLING_BYTES = 64 * 1024 * 1024;
export const ASSEMBLY_MS = 30_000;
/** A container's labels (keys and values, UTF-8), and one host's together. */
export const MAX_LABEL_BYTES_PER_CONTAINER = 4 * 1024;
export const MAX_LABEL_BYTES_PER_HOST = 1024 * 1024;
/** Beats a host may send per second on average, and in one burst. */
export const BEATS_PER_SECOND = 5;
const BEAT_BURST = 10;
/** Bytes of beats a host may send per second on average (one large table a second), and in one burst. */
export const BEAT_BYTES_PER_SECOND = 1024 * 1024;
const BEAT_BYTES_BURST = 2 * 1024 * 1024;

interface Bucket {
  beats: number;
  bytes: number;
  at: number;
  dropped: number;
}

export class BeatGate {
  private readonly buckets = new Map<string, Bucket>();

  /** Whether `host`'s beat of `bytes` is read; a false costs the beat nothing more. */
  admit(host: string, bytes: number, now = Date.now()): boolean {
    let bucket = this.buckets.get(host);
    if (!bucket) {
      bucket = { beats: BEAT_BURST, bytes: BEAT_BYTES_BURST, at: now, dropped: 0 };
      this.buckets.set(host, bucket);
    }
    const seconds = Math.max(0, now - bucket.at) / 1000;
    bucket.at = now;
    bucket.beats = Math.min(BEAT_BURST, bucket.beats + seconds * BEATS_PER_SECOND);
    bucket.bytes = Math.min(BEAT_BYTES_BURST, bucket.bytes + seconds * BEAT_BYTES_PER_SECOND);
    if (bytes > MAX_BEAT_BYTES || bucket.beats < 1 || bucket.bytes < bytes) {
      bucket.dropped++;
      return false;
    }
    bucket.beats -= 1;
    bucket.bytes -= bytes;
    return true;
  }

  /** Beats of `host` dropped so far, and forgets the count (for a log line now and then). */
  takeDropped(host: string): number {
    const bucket = this.buckets.get(host);
    const dropped = bucket?.dropped ?? 0;
    if (bucket) bucket.dropped = 0;
    return dropped;
  }
}
