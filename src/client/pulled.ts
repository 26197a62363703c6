import { AsyncQueue } from '../flow/index.js';
import type { RpcError } from '../protocol/index.js';

/** What a stream's consumer hears. */
export interface StreamConsumer {
  value: (value: unknown, bytes: number) => void;
  complete: () => void;
  error: (error: RpcError) => void;
}

/**
 * A stream as an async iterable, pulled: each value taken by the loop is released to the
 * call (its credit renewed, spec §4.8), so the queue holds at most what the server may send
 * ahead of the loop (one window and a frame, CR-7, or the call ends).
 */
export function pulled<T>(open: (consumer: StreamConsumer) => { release: (bytes: number) => void; cancel: () => void }): AsyncIterable<T> {
  return {
    [Symbol.asyncIterator]: (): AsyncIterator<T> => {
      const queue = new AsyncQueue<{ value: T; bytes: number }>();
      const call = open({
        value: (value, bytes) => queue.push({ value: value as T, bytes }),
        complete: () => queue.end(),
        error: (error) => queue.end(error),
      });
      return {
        async next(): Promise<IteratorResult<T>> {
          const step = await queue.next();
          if (step.done) return { value: undefined, done: true };
          call.release(step.value.bytes); // taken by the consumer: the server may send as much again
          return { value: step.value.value, done: false };
        },
        async return(): Promise<IteratorResult<T>> {
          call.cancel();
          return { value: undefined, done: true };
        },
      };
    },
  };
}
