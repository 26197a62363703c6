import { Wakeup } from './wakeup.js';

/**
 * Items pushed by one side, pulled in order by one async loop on the other, and an
 * end: normal, failed or closed (dropping what is still queued). The queue holds what
 * was pushed and not yet taken; whoever pushes bounds it (by credit, by a window).
 */
export class AsyncQueue<T> implements AsyncIterable<T> {
  private readonly items: T[] = [];
  private readonly wakeup = new Wakeup();
  private ending: { error?: unknown } | undefined;
  private closed = false;

  /** Items pushed and not yet taken. */
  get size(): number {
    return this.items.length;
  }

  get isEnded(): boolean {
    return this.ending !== undefined || this.closed;
  }

  push(item: T): void {
    if (this.isEnded) return;
    this.items.push(item);
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
    this.items.length = 0;
    this.wakeup.wake();
  }

  /**
   * The next item or the end if one is there now, undefined if the loop would have to wait:
   * a consumer that takes a queued item this way skips the promise `next` makes for it.
   */
  take(): IteratorResult<T, undefined> | undefined {
    if (this.closed) return { value: undefined, done: true };
    if (this.items.length > 0) return { value: this.items.shift() as T, done: false };
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
}
