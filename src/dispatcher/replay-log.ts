import type { Sized } from './call-outlet.js';
import type { ReplayBudget, RoomWaiter } from './replay-budget.js';

/** What a sliding log keeps of its bound when it lets go (HTTP-8). */
const SLID_TO = 0.75;

interface Entry {
  readonly seq: number;
  readonly output: unknown;
  readonly size: number;
  /** The entry as the current connection's outlet encodes it, until sent; dropped when the call moves. */
  frame: Sized | undefined;
}

/**
 * A resumable call's output, numbered (spec/PROTOCOL.md §4.9): every item from the
 * first its caller has not acknowledged, sent or not. `unsent` marks where the
 * current connection is; a resume moves it back to the first item after the
 * caller's last seq. Its bytes count against the call's bound and the budget.
 *
 * A log that `slides` is for callers that never acknowledge (plain HTTP, §5.6): what
 * was sent is let go, oldest first, as soon as the log is over a bound, so it keeps
 * the last items sent rather than stopping the producer; what was never sent is
 * never let go.
 */
export class ReplayLog {
  private readonly entries: Entry[] = [];
  /** Index in `entries` of the first item not yet handed to the current connection. */
  private unsent = 0;
  private lastSeq = 0;
  private heldBytes = 0;

  constructor(
    private readonly maxBytes: number,
    private readonly budget: ReplayBudget,
    private readonly subject: string | null,
    private readonly slides = false,
  ) {}

  /** No more items may be kept until the caller acknowledges some (the producer waits). */
  get full(): boolean {
    return this.heldBytes >= this.maxBytes || this.budget.exhausted(this.subject);
  }

  /** Over this call's own bound, as opposed to the identity's or server's. */
  get overOwnBound(): boolean {
    return this.heldBytes >= this.maxBytes;
  }

  get bytes(): number {
    return this.heldBytes;
  }

  /** The sequence number the next item will carry. */
  get nextSeq(): number {
    return this.lastSeq + 1;
  }

  /** `waiter` hears when the identity's or server's budget may have room again. */
  waitForBudget(waiter: RoomWaiter): void {
    this.budget.wait(waiter);
  }

  /** `waiter` has ended: it waits for nothing any more. */
  stopWaiting(waiter: RoomWaiter): void {
    this.budget.forget(waiter);
  }

  get hasUnsent(): boolean {
    return this.unsent < this.entries.length;
  }

  /** A call taken up from another server (§4.9): its items are numbered on from `seq`, the last its caller has. */
  continueAfter(seq: number): void {
    this.lastSeq = seq;
  }

  /**
   * Keeps one output, encoded with `nextSeq`; returns its sequence number. `attached`: a
   * connection may send the frame as is; without one it is not kept (a resume encodes anew),
   * so what the log holds is about the bytes it counts, not twice them.
   */
  append(output: unknown, frame: Sized, attached: boolean): number {
    const seq = ++this.lastSeq;
    this.entries.push({ seq, output, size: frame.byteLength, frame: attached ? frame : undefined });
    this.heldBytes += frame.byteLength;
    this.budget.take(this.subject, frame.byteLength);
    return seq;
  }

  /** The next item to send, encoded by `encode` when this connection has not yet done it. */
  nextUnsent(encode: (output: unknown, seq: number) => Sized): Sized {
    const entry = this.entries[this.unsent]!;
    return (entry.frame ??= encode(entry.output, entry.seq));
  }

  /** The next item went to the connection, which holds its frame until written: the log keeps only the output. */
  markSent(): void {
    this.entries[this.unsent]!.frame = undefined;
    this.unsent++;
    if (this.slides) this.slide();
  }

  /** Whether everything after `seq` is still kept: a caller that has received up to `seq` can be given the rest. */
  keepsAfter(seq: number): boolean {
    const first = this.entries[0]?.seq ?? this.lastSeq + 1;
    return seq >= first - 1 && seq <= this.lastSeq;
  }

  /** The caller has received everything up to `seq`: those are never sent again. Only sent items can be acknowledged. */
  ack(seq: number): void {
    let drop = 0;
    while (drop < this.unsent && this.entries[drop]!.seq <= seq) drop++;
    this.drop(drop);
  }

  /** A new connection takes the call up after `seq`: what follows is sent again, encoded anew. */
  rewind(seq: number): void {
    this.ack(seq);
    this.unsent = 0;
    this.forgetFrames();
  }

  /** The connection is gone: its encodings are of no use to the next one. */
  forgetFrames(): void {
    for (const entry of this.entries) entry.frame = undefined;
  }

  /** The call is forgotten: its bytes go back to the budget. */
  clear(): void {
    this.drop(this.entries.length);
  }

  /**
   * Once the log, or the budget it draws on, is over its bound: lets go of the oldest sent
   * items, down to three quarters of the log's bound (and below the budget's). Letting go
   * of one item at a time would move every item kept, for every item sent.
   */
  private slide(): void {
    if (!this.full) return;
    const keep = this.maxBytes * SLID_TO;
    let count = 0;
    let bytes = 0;
    while (count < this.unsent && (this.heldBytes - bytes > keep || this.budget.exhausted(this.subject, bytes))) bytes += this.entries[count++]!.size;
    this.drop(count);
  }

  private drop(count: number): void {
    if (count === 0) return;
    let bytes = 0;
    for (const entry of this.entries.splice(0, count)) bytes += entry.size;
    this.unsent = Math.max(0, this.unsent - count);
    this.heldBytes -= bytes;
    this.budget.give(this.subject, bytes);
  }
}
