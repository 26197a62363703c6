import { Wakeup } from './wakeup.js';

/**
 * Items pushed under keys (a producer each: a fan-out's targets), pulled by one async loop
 * in turns: one item of each key that has items waiting, round and round, each key's own
 * items in the order pushed. A key that pushes without pause gets one turn in every round,
 * never the whole queue, so an item of another key waits for at most one item of each
 * other key beside the one the loop is busy with. Ends as AsyncQueue does: normal, failed
 * or closed (dropping what is queued). Whoever pushes bounds it (`sizeOf` says how far a
 * key is ahead of the loop).
 */
export class FairQueue<T> implements AsyncIterable<T> {
  private readonly byKey = new Map<string, T[]>();
  /** The keys with items waiting for their turn, the next first. */
  private waiting: string[] = [];
  /**
   * The key of the item the loop took last: its turn lasts until the loop asks for the next
   * item, so it goes back in line behind the keys that came while the loop was busy with it.
   */
  private served: string | undefined;
  private count = 0;
  private readonly wakeup = new Wakeup();
  private ending: { error?: unknown } | undefined;
  private closed = false;

  /** Items pushed and not yet taken. */
  get size(): number {
    return this.count;
  }

  /** Items of `key` pushed and not yet taken. */
  sizeOf(key: string): number {
    return this.byKey.get(key)?.length ?? 0;
  }

  get isEnded(): boolean {
    return this.ending !== undefined || this.closed;
  }

  push(key: string, item: T): void {
    if (this.isEnded) return;
    const items = this.byKey.get(key);
    if (items) items.push(item);
    else {
      this.byKey.set(key, [item]);
      if (key !== this.served) this.waiting.push(key);
    }
    this.count++;
    this.wakeup.wake();
  }

  /** No more items: the loop finishes once it has taken every one queued, then throws `error` if given. */
  end(error?: unknown): void {
    if (this.isEnded) return;
    this.ending = error === undefined ? {} : { error };
    this.wakeup.wake();
  }

  /** The loop finishes now; what is queued is dropped. */
  close(): void {
    this.closed = true;
    this.byKey.clear();
    this.waiting = [];
    this.served = undefined;
    this.count = 0;
    this.wakeup.wake();
  }

  /** The next item (the next key's turn) or the end if one is there now, undefined if the loop would have to wait. */
  take(): IteratorResult<T, undefined> | undefined {
    if (this.closed) return { value: undefined, done: true };
    if (this.count > 0) return { value: this.takeTurn(), done: false };
    if (!this.ending) return undefined;
    if ('error' in this.ending) throw this.ending.error;
    return { value: undefined, done: true };
  }

  /** The next item, or done, waiting for one. */
  async next(): Promise<IteratorResult<T, undefined>> {
    for (;;) {
      const step = this.take();
      if (step) return step;
      await this.wakeup.wait();
    }
  }

  [Symbol.asyncIterator](): AsyncIterator<T, undefined> {
    return { next: () => this.next(), return: async () => (this.close(), { value: undefined, done: true }) };
  }

  private takeTurn(): T {
    if (this.served !== undefined && this.byKey.has(this.served)) this.waiting.push(this.served);
    const key = this.waiting.shift()!;
    const items = this.byKey.get(key)!;
    const item = items.shift() as T;
    this.count--;
    if (items.length === 0) this.byKey.delete(key);
    this.served = key;
    return item;
  }
}
