import type { Observable, Subscription } from 'rxjs';

/**
 * An Observable as an async iterable. Values wait in a queue until pulled; leaving
 * the loop (break, return, throw) unsubscribes, which aborts the call.
 */
export function toAsyncIterable<T>(source: Observable<T>): AsyncIterable<T> {
  return {
    [Symbol.asyncIterator](): AsyncIterator<T> {
      const queue: IteratorResult<T>[] = [];
      let failure: { error: unknown } | undefined;
      let wake: (() => void) | undefined;
      let subscription: Subscription | undefined;
      const push = (item: IteratorResult<T> | { error: unknown }): void => {
        if ('error' in item) failure = item;
        else queue.push(item);
        wake?.();
        wake = undefined;
      };
      subscription = source.subscribe({
        next: (value) => push({ value, done: false }),
        error: (error: unknown) => push({ error }),
        complete: () => push({ value: undefined, done: true }),
      });
      return {
        async next() {
          for (;;) {
            const item = queue.shift();
            if (item) return item;
            if (failure) throw failure.error;
            await new Promise<void>((resolve) => (wake = resolve));
          }
        },
        async return() {
          subscription?.unsubscribe();
          subscription = undefined;
          return { value: undefined, done: true };
        },
      };
    },
  };
}
