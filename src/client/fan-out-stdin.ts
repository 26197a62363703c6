import { Wakeup } from '../flow/index.js';
import { RpcError } from '../protocol/index.js';

/**
 * One stdin read once and given to every target of a fan-out, chunk by chunk in
 * lockstep: the next chunk is read only when every target still running has taken the
 * last one (each taking it as its call's input credit allows, spec §4.7). So the
 * slowest reader sets the pace and one chunk is held, never the whole stdin per
 * target. Nothing is read until every target has started or ended, so none misses
 * the beginning; a target that ends leaves, and the others go on without it.
 */
export class StdinFanOut {
  private readonly iterator: AsyncIterator<Uint8Array>;
  /** Chunks read so far; `current` is the last of them. */
  private read = 0;
  private current: Uint8Array | undefined;
  private ended = false;
  private failure: { error: unknown } | undefined;
  private reading = false;
  /** Per target: chunks taken, or `left` once its call ended. */
  private readonly taken = new Map<string, number | 'left'>();
  private readonly wakeup = new Wakeup();

  constructor(source: AsyncIterable<Uint8Array>, private readonly targets: readonly string[]) {
    this.iterator = source[Symbol.asyncIterator]();
  }

  /**
   * The stdin of one target, to pass as its exec's stdin source: read once. A second read
   * (a run made again) fails rather than give the command an empty or partial stdin.
   */
  reader(target: string): AsyncIterable<Uint8Array> {
    return {
      [Symbol.asyncIterator]: () => {
        if (this.taken.has(target)) return { next: () => Promise.reject(new RpcError('INTERNAL', `the stdin of ${target} was already read by a run of it: a streamed stdin cannot be given twice`)) };
        this.taken.set(target, 0);
        this.wakeup.wake();
        return {
          next: () => this.next(target),
          return: async () => {
            this.leave(target);
            return { value: undefined, done: true };
          },
        };
      },
    };
  }

  /** The target's call ended: the others no longer wait for it. */
  leave(target: string): void {
    this.taken.set(target, 'left');
    this.wakeup.wake();
    if ([...this.taken.values()].every((t) => t === 'left') && this.taken.size === this.targets.length) void this.iterator.return?.()?.catch(() => undefined);
  }

  private async next(target: string): Promise<IteratorResult<Uint8Array>> {
    for (;;) {
      const taken = this.taken.get(target);
      if (taken === 'left' || taken === undefined) return { value: undefined, done: true };
      if (taken < this.read && this.current) {
        this.taken.set(target, this.read);
        // The last to take it lets whoever waits read on.
        this.wakeup.wake();
        return { value: this.current, done: false };
      }
      if (this.failure) throw this.failure.error;
      if (this.ended) return { value: undefined, done: true };
      if (!this.reading && this.everyoneHasTaken()) await this.readNext();
      else await this.wakeup.wait();
    }
  }

  /** Every target has started or left, and each still running has the current chunk. */
  private everyoneHasTaken(): boolean {
    if (this.targets.some((t) => !this.taken.has(t))) return false;
    return [...this.taken.values()].every((t) => t === 'left' || t === this.read);
  }

  private async readNext(): Promise<void> {
    this.reading = true;
    try {
      const step = await this.iterator.next();
      if (step.done) this.ended = true;
      else {
        this.current = step.value;
        this.read++;
      }
    } catch (error) {
      this.failure = { error };
    } finally {
      this.reading = false;
      this.wakeup.wake();
    }
  }
}
