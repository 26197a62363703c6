import { isObservable, Subscriber, type Observable } from 'rxjs';
import { RpcError } from '../protocol/index.js';
import type { LiveCall } from './live-call.js';
import type { CallContext, StreamSource, SubscriptionOperation, UnaryOperation } from './operation.js';

/** What the pump reports to the session; the session turns it into frames. */
export interface PumpSink {
  /** Sends one `call.responded`. Non-terminal for subscriptions, terminal for unary. */
  respond(call: LiveCall, output: unknown, final: boolean): void;
  complete(call: LiveCall): void;
  /**
   * Ends the call with `call.error`. `byMachinery`: the dispatcher ends it (timeout,
   * overflow, shutdown) and cancels the handler; otherwise the handler itself failed.
   */
  fail(call: LiveCall, error: unknown, byMachinery: boolean): void;
}

/** Unary: exactly one `call.responded` or `call.error` (spec/PROTOCOL.md §4.2, RES-1). */
export function pumpUnary(call: LiveCall, op: UnaryOperation, input: unknown, ctx: CallContext, sink: PumpSink): void {
  let result: unknown;
  try {
    result = op.handler(input, ctx);
  } catch (error) {
    sink.fail(call, error, false);
    return;
  }
  Promise.resolve(result).then(
    (output) => {
      if (!call.ended) sink.respond(call, output, true);
    },
    (error: unknown) => {
      if (!call.ended) sink.fail(call, error, false);
    },
  );
}

/** Subscription: items, then `call.completed` or `call.error`, then nothing (§4.2–§4.5). */
export function pumpStream(call: LiveCall, op: SubscriptionOperation, input: unknown, ctx: CallContext, sink: PumpSink): void {
  let source: StreamSource<unknown>;
  try {
    source = op.handler(input, ctx) as StreamSource<unknown>;
  } catch (error) {
    sink.fail(call, error, false);
    return;
  }
  if (isObservable(source)) {
    pumpObservable(call, source, sink);
  } else if (source !== null && typeof source === 'object' && Symbol.asyncIterator in source) {
    void pumpIterable(call, source, sink);
  } else {
    sink.fail(call, new RpcError('INTERNAL', `subscription handler returned ${describe(source)}, not an Observable or async iterable`), false);
  }
}

/**
 * Push-based sources cannot be paused: overflowing the call's buffer ends the call
 * with SLOW_CONSUMER and unsubscribes (spec/PROTOCOL.md §8, BP-2).
 */
function pumpObservable(call: LiveCall, source: Observable<unknown>, sink: PumpSink): void {
  // Our own Subscriber, handed to the source as is: unsubscribing it from inside
  // next() flips the very `closed` flag a synchronous producer loop checks.
  const subscriber = new Subscriber<unknown>({
    next(value) {
      if (call.ended) return;
      if (call.full) {
        sink.fail(call, RpcError.of('SLOW_CONSUMER', `stream outran the ${call.maxBufferedBytes}-byte buffer towards a slow peer`), true);
        return;
      }
      sink.respond(call, value, false);
    },
    error(error: unknown) {
      if (!call.ended) sink.fail(call, error, false);
    },
    complete() {
      if (!call.ended) sink.complete(call);
    },
  });
  call.teardown = () => subscriber.unsubscribe();
  source.subscribe(subscriber);
}

const YIELD_EVERY = 32;

/** Pull-based sources are simply not pulled while the call's buffer is full (§8). */
async function pumpIterable(call: LiveCall, source: AsyncIterable<unknown>, sink: PumpSink): Promise<void> {
  let iterator: AsyncIterator<unknown>;
  try {
    iterator = source[Symbol.asyncIterator]();
  } catch (error) {
    sink.fail(call, error, false);
    return;
  }
  call.teardown = () => {
    // return() on a suspended async generator settles only after its current step;
    // the AbortSignal, fired first, is the immediate notice. A rejection here has
    // nobody left to hear it.
    try {
      iterator.return?.().then(undefined, () => undefined);
    } catch {
      // A hand-written iterator whose return() throws is torn down all the same.
    }
  };
  try {
    for (let pulled = 1; ; pulled++) {
      if (call.full) await call.waitForRoom();
      // An iterator that never really waits, behind a transport that is never full,
      // would otherwise hold the event loop: give other calls and timers a turn.
      else if (pulled % YIELD_EVERY === 0) await new Promise((resolve) => setImmediate(resolve));
      if (call.ended) return;
      const step = await iterator.next();
      if (call.ended) return;
      if (step.done) {
        sink.complete(call);
        return;
      }
      sink.respond(call, step.value, false);
    }
  } catch (error) {
    if (!call.ended) sink.fail(call, error, false);
  }
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value === 'object') return value.constructor?.name ?? 'an object';
  return typeof value;
}
