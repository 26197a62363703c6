import { FairQueue, Wakeup } from '../flow/index.js';
import { Observable, type Subscriber } from '../rx/index.js';

/**
 * Items of one producer a pulled loop may hold before that producer waits for it: the one
 * the loop takes next, and one more ready behind it.
 */
const LOOP_HIGH_WATER_PER_KEY = 2;

/**
 * The frames of many calls merged into one stream, as an Observable and as an async
 * iterable, each call's items under its key (a fan-out's target). Subscribers hear each
 * item as it comes. A loop pulls them in turns, one item of each key that has some waiting
 * (FairQueue), so one call that floods never holds another's items behind its own; and
 * once a loop holds LOOP_HIGH_WATER_PER_KEY items of a key, `deliver` for that key waits
 * for it, so each call's output credit (spec §4.8) holds its command, not this process's
 * memory. Items delivered while nobody listens are not kept.
 */
export class FrameFanIn<T> {
  private readonly subscribers = new Set<Subscriber<T>>();
  private readonly loops = new Set<FairQueue<T>>();
  private readonly taken = new Wakeup();
  private ending: { error?: unknown } | undefined;

  readonly stream: Observable<T> & AsyncIterable<T> = Object.assign(
    new Observable<T>((subscriber) => {
      if (this.ending) return this.finish(subscriber);
      this.subscribers.add(subscriber);
      return () => this.subscribers.delete(subscriber);
    }),
    { [Symbol.asyncIterator]: (): AsyncIterator<T> => this.loop() },
  );

  async deliver(key: string, item: T): Promise<void> {
    for (const subscriber of this.subscribers) subscriber.next(item);
    for (const loop of this.loops) loop.push(key, item);
    while (this.behind(key)) await this.taken.wait();
  }

  end(error?: unknown): void {
    if (this.ending) return;
    this.ending = error === undefined ? {} : { error };
    for (const subscriber of this.subscribers) this.finish(subscriber);
    this.subscribers.clear();
    for (const loop of this.loops) loop.end(error);
  }

  /** Whether a loop holds as many of `key`'s items as it may before their producer waits. */
  private behind(key: string): boolean {
    for (const loop of this.loops) if (loop.sizeOf(key) >= LOOP_HIGH_WATER_PER_KEY) return true;
    return false;
  }

  private finish(subscriber: Subscriber<T>): void {
    if (this.ending && 'error' in this.ending) subscriber.error(this.ending.error);
    else subscriber.complete();
  }

  private loop(): AsyncIterator<T> {
    const queue = new FairQueue<T>();
    if (this.ending) queue.end(this.ending.error);
    else this.loops.add(queue);
    return {
      next: async () => {
        const step = await queue.next();
        this.taken.wake();
        return step.done ? { value: undefined, done: true } : step;
      },
      return: async () => {
        queue.close();
        this.loops.delete(queue);
        this.taken.wake();
        return { value: undefined, done: true };
      },
    };
  }
}
