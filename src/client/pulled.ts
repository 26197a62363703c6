import { AsyncQueue } from '../flow/index.js';
import type { RpcError } from '../protocol/index.js';

/** What a stream's consumer hears. */
export interface StreamConsumer {
  value: (value: unknown, bytes: number) => void;
  complete: () => void;
  error: (error: RpcError) => void;
}

/** The call a pulled stream reads: told what the loop took, or that the loop stopped. */
export interface PulledCall {
  release: (bytes: number) => void;
  cancel: () => void;
}

/**
 * A stream as an async iterable, pulled: each value taken by the loop is released to the
 * call (its credit renewed, spec §4.8), so the queue holds at most what the server may send
 * ahead of the loop (one window and a frame, CR-7, or the call ends).
 */
export function pulled<T>(open: (consumer: StreamConsumer) => PulledCall): AsyncIterable<T> {
  return { [Symbol.asyncIterator]: () => new PulledStream<T>(open) };
}

/**
 * One iteration of a pulled stream, its consumer and its iterator in one object: a class,
 * not closures made for each stream (why: HandedOn, stream-call.ts).
 */
class PulledStream<T> implements AsyncIterator<T>, StreamConsumer {
  private readonly queue = new AsyncQueue<{ value: T; bytes: number }>();
  private readonly call: PulledCall;

  constructor(open: (consumer: StreamConsumer) => PulledCall) {
    this.call = open(this);
  }

  value(value: unknown, bytes: number): void {
    this.queue.push({ value: value as T, bytes });
  }

  complete(): void {
    this.queue.end();
  }

  error(error: RpcError): void {
    this.queue.end(error);
  }

  async next(): Promise<IteratorResult<T>> {
    const step = this.queue.take() ?? (await this.queue.next());
    if (step.done) return { value: undefined, done: true };
    this.call.release(step.value.bytes); // taken by the consumer: the server may send as much again
    return { value: step.value.value, done: false };
  }

  async return(): Promise<IteratorResult<T>> {
    this.call.cancel();
    return { value: undefined, done: true };
  }
}
