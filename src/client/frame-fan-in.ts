import { AsyncQueue, Wakeup } from '../flow/index.js';
import { Observable, type Subscriber } from '../rx/index.js';

/** Frames a pulled loop may fall behind by before the producers wait for it. */
const LOOP_HIGH_WATER = 64;

/**
 * The frames of many calls merged into one stream, as an Observable and as an async
 * iterable. Subscribers hear each frame as it comes; a loop pulls, and once it is
 * LOOP_HIGH_WATER frames behind, `deliver` waits for it, so the calls' output credit
 * (spec §4.8) holds the commands, not this process's memory. Frames delivered while
 * nobody listens are not kept.
 */
export class FrameFanIn<T> {
  private readonly subscribers = new Set<Subscriber<T>>();
  private readonly loops = new Set<AsyncQueue<T>>();
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

  async deliver(item: T): Promise<void> {
    for (const subscriber of this.subscribers) subscriber.next(item);
    for (const loop of this.loops) loop.push(item);
    while ([...this.loops].some((loop) => loop.size > LOOP_HIGH_WATER)) await this.taken.wait();
  }

  end(error?: unknown): void {
    if (this.ending) return;
    this.ending = error === undefined ? {} : { error };
    for (const subscriber of this.subscribers) this.finish(subscriber);
    this.subscribers.clear();
    for (const loop of this.loops) loop.end(error);
  }

  private finish(subscriber: Subscriber<T>): void {
    if (this.ending && 'error' in this.ending) subscriber.error(this.ending.error);
    else subscriber.complete();
  }

  private loop(): AsyncIterator<T> {
    const queue = new AsyncQueue<T>();
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
