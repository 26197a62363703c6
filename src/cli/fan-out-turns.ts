import { FairQueue, Wakeup } from '../flow/index.js';
import type { TargetLines } from './fan-out-output.js';

/** What one turn of a target's writes: lines up to about this many bytes, prefixes included (a longer line is a turn of its own). */
export const TURN_BYTES = 4096;
/** A target's output waiting for the reader past which taking more of it waits. */
export const HELD_BYTES_PER_TARGET = 64 * 1024;
/** The most one write carries, turns after turns, while the reader takes each at once. */
const MOST_PER_WRITE = 64 * 1024;
/** A write handed over within this long found the reader keeping up. */
const KEPT_UP_MS = 1;

const NEWLINE = 0x0a;

/** One turn: a slice of a target's output, or its end (its unfinished line, then `after`). */
type Turn = { readonly target: string; readonly bytes: Uint8Array } | { readonly target: string; readonly after: Buffer };

/**
 * Many targets' output written to one stream as prefixed lines, in turns (docs/security.md
 * "Fan-out", one flooding target): each turn about TURN_BYTES of one target's lines, the
 * targets with output waiting taking turns (FairQueue), a write made only once the one
 * before the last has been handed to the reader, so a line of one target waits behind at
 * most two writes, plus what the reader has not read yet. A reader that takes each write at
 * once is given the turns queued, in their order, several to a write. Output is held as it came and made into lines only at its turn,
 * so a target's share is counted in its own bytes however much its lines grow with their
 * prefixes. A target over its share waits (`room`, execMany's `pace`): the reader's pace
 * holds that target, through its call's credit, and nothing else.
 */
export class TurnWriter {
  private readonly turns = new FairQueue<Turn>();
  private readonly held = new Map<string, number>();
  private readonly written = new Wakeup();
  private readonly writing: Promise<void>;
  private failure: { error: unknown } | undefined;

  /** `write` resolves once the bytes are handed to the stream's reader (not merely buffered). */
  constructor(
    private readonly stream: 'stdout' | 'stderr',
    private readonly lines: TargetLines,
    private readonly write: (bytes: Buffer) => Promise<void>,
  ) {
    this.writing = this.pump();
  }

  /** Queues output of `target`, to be made into lines at its turns. */
  add(target: string, bytes: Uint8Array): void {
    if (this.failure) throw this.failure.error;
    if (bytes.byteLength === 0) return;
    for (const slice of slicesOf(bytes, Buffer.byteLength(`${target}: `))) this.turns.push(target, { target, bytes: slice });
    this.held.set(target, (this.held.get(target) ?? 0) + bytes.byteLength);
  }

  /**
   * Undefined while `target` holds less than its share waiting; else a promise of the turn
   * that brings it under (or of a failure to write): what its producer waits for before more.
   */
  room(target: string): Promise<void> | undefined {
    if (this.failure || this.turns.isEnded || (this.held.get(target) ?? 0) < HELD_BYTES_PER_TARGET) return undefined;
    return (async () => {
      while (!this.failure && !this.turns.isEnded && (this.held.get(target) ?? 0) >= HELD_BYTES_PER_TARGET) await this.written.wait();
    })();
  }

  /** The target ended: after its output, its unfinished line, then `after` (empty for none). */
  end(target: string, after: Buffer = Buffer.alloc(0)): void {
    this.turns.push(target, { target, after });
  }

  /** Writes what is queued, then is done; rejects with a write's failure. Cancelled (Ctrl-C), drops what is queued instead. */
  async close(cancelled = false): Promise<void> {
    if (cancelled) this.turns.close();
    else this.turns.end();
    this.written.wake();
    await this.writing;
    if (this.failure) throw this.failure.error;
  }

  private async pump(): Promise<void> {
    // The write before this one: the next is made while the stream still writes it, so a fast
    // reader never waits on this loop, and a slow one has at most two writes ahead of a new line.
    let writing: Promise<void> = Promise.resolve();
    // What one write may carry: turns queued now, in their order, while the reader takes each
    // write at once; a single turn again as soon as one had to wait for it.
    let budget = TURN_BYTES;
    try {
      for (let step = await this.turns.next(); !step.done; step = await this.turns.next()) {
        const parts = [this.made(step.value)];
        let size = parts[0]!.byteLength;
        for (let more = size < budget ? this.turns.take() : undefined; more && !more.done; more = size < budget ? this.turns.take() : undefined) {
          parts.push(this.made(more.value));
          size += parts[parts.length - 1]!.byteLength;
        }
        const started = performance.now();
        const written = size > 0 ? this.write(parts.length === 1 ? parts[0]! : Buffer.concat(parts)) : Promise.resolve();
        void written.then(() => (budget = performance.now() - started <= KEPT_UP_MS ? Math.min(budget * 2, MOST_PER_WRITE) : TURN_BYTES), () => undefined);
        await writing;
        writing = written;
        this.written.wake();
      }
      await writing;
    } catch (error) {
      this.failure = { error };
      this.turns.close();
      this.written.wake();
    }
  }

  /** A turn as lines for the stream; its bytes no longer count as held. */
  private made(turn: Turn): Buffer {
    const { target } = turn;
    if ('after' in turn) return Buffer.concat([this.lines.flush(target, this.stream), turn.after]);
    const left = (this.held.get(target) ?? 0) - turn.bytes.byteLength;
    if (left > 0) this.held.set(target, left);
    else this.held.delete(target);
    return this.lines.push(target, this.stream, turn.bytes);
  }
}

/**
 * `bytes` cut into turns whose lines, each with a prefix of `prefixBytes`, come to at most
 * TURN_BYTES: cut after a newline where one is in reach, else at TURN_BYTES.
 */
export function slicesOf(bytes: Uint8Array, prefixBytes: number): Uint8Array[] {
  const slices: Uint8Array[] = [];
  let start = 0;
  while (start < bytes.byteLength) {
    let end = start;
    let shown = 0;
    for (;;) {
      const newline = bytes.indexOf(NEWLINE, end);
      const lineEnd = newline < 0 ? bytes.byteLength : newline + 1;
      const cost = lineEnd - end + (newline < 0 ? 0 : prefixBytes);
      if (shown + cost > TURN_BYTES) {
        // Nothing whole fits: the start of this line, up to the turn's size.
        if (end === start) end = Math.min(lineEnd, start + TURN_BYTES);
        break;
      }
      shown += cost;
      end = lineEnd;
      if (end === bytes.byteLength) break;
    }
    slices.push(bytes.subarray(start, end));
    start = end;
  }
  return slices;
}
