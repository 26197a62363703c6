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
      const queue: { value: T; bytes: number }[] = [];
      let end: { error?: unknown } | undefined;
      let wake: (() => void) | undefined;
      const notify = (): void => {
        wake?.();
        wake = undefined;
      };
      const call = open({
        value: (value, bytes) => {
          queue.push({ value: value as T, bytes });
          notify();
        },
        complete: () => {
          end = {};
          notify();
        },
        error: (error) => {
          end = { error };
          notify();
        },
      });
      return {
        async next(): Promise<IteratorResult<T>> {
          for (;;) {
            const item = queue.shift();
            if (item) {
              call.release(item.bytes); // taken by the consumer: the server may send as much again
              return { value: item.value, done: false };
            }
            if (end) {
              if (end.error !== undefined) throw end.error;
              return { value: undefined, done: true };
            }
            await new Promise<void>((resolve) => (wake = resolve));
          }
        },
        async return(): Promise<IteratorResult<T>> {
          call.cancel();
          return { value: undefined, done: true };
        },
      };
    },
  };
}
