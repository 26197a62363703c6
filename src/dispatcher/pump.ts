import { nextTurn } from '../flow/index.js';
import { isObservable, Subscriber, type Observable } from '../rx/index.js';
import { RpcError } from '../protocol/index.js';
import type { LiveCall } from './live-call.js';
import type { CallContext, StreamSource, SubscriptionOperation, UnaryOperation } from './operation.js';

/**
 * Runs a handler and reports what it produces to its call; the call decides what
 * reaches the wire (LiveCall), so a source that misbehaves (emits after an error,
 * resolves after a timeout) changes nothing.
 */

/** Unary: exactly one `call.responded` or `call.error` (spec/PROTOCOL.md §4.2, RES-1). */
export function pumpUnary(call: LiveCall, op: UnaryOperation, input: unknown, ctx: CallContext): void {
  let result: unknown;
  try {
    result = op.handler(input, ctx);
  } catch (error) {
    call.fail(error);
    return;
  }
  Promise.resolve(result).then(
    (output) => call.answer(output),
    (error: unknown) => call.fail(error),
  );
}

/** Subscription: items, then `call.completed` or `call.error`, then nothing (§4.2–§4.5). */
export function pumpStream(call: LiveCall, op: SubscriptionOperation, input: unknown, ctx: CallContext): void {
  let source: StreamSource<unknown>;
  try {
    source = op.handler(input, ctx) as StreamSource<unknown>;
  } catch (error) {
    call.fail(error);
    return;
  }
  if (isObservable(source)) {
    pumpObservable(call, source);
  } else if (source !== null && typeof source === 'object' && Symbol.asyncIterator in source) {
    void pumpIterable(call, source);
  } else {
    call.fail(new RpcError('INTERNAL', `subscription handler returned ${typeName(source)}, not an Observable or async iterable`));
  }
}

/**
 * Push-based sources cannot be paused: overflowing the call's buffer ends the call
 * with SLOW_CONSUMER and unsubscribes (spec/PROTOCOL.md §8, BP-2).
 */
function pumpObservable(call: LiveCall, source: Observable<unknown>): void {
  // Our own Subscriber, handed to the source as is: unsubscribing it from inside
  // next() flips the very `closed` flag a synchronous producer loop checks. Methods,
  // not arrow properties: measured, the arrows cost ~220 bytes more per live call.
  const subscriber = new Subscriber<unknown>({
    next(value) {
      if (call.overflowing) call.terminate(RpcError.of('SLOW_CONSUMER', `stream outran the ${call.maxBufferedBytes}-byte buffer towards a slow peer`));
      else call.next(value);
    },
    error(error: unknown) {
      call.fail(error);
    },
    complete() {
      call.complete();
    },
  });
  call.teardown = () => subscriber.unsubscribe();
  source.subscribe(subscriber);
}

/**
 * Items all pull sources of this process may take in one turn of the event loop;
 * past it, each pump yields to the event loop before its next item. A budget per
 * pump (32 items each) let 10,000 subscriptions take 320,000 items in one turn:
 * seconds in which no socket was read or flushed. Shared, a turn stays short
 * however many calls run.
 */
const ITEMS_PER_TURN = 256;
let itemsThisTurn = 0;
let turnResetScheduled = false;

function turnBudgetSpent(): boolean {
  if (!turnResetScheduled) {
    turnResetScheduled = true;
    nextTurn(() => {
      turnResetScheduled = false;
      itemsThisTurn = 0;
    });
  }
  return ++itemsThisTurn > ITEMS_PER_TURN;
}

/**
 * The pumps that spent the turn's budget, in the order they did: each later turn wakes
 * the first ITEMS_PER_TURN of them, not all. Woken all at once, 10,000 waiting pumps
 * each ran a step per turn only to find the budget spent again, for 256 items taken.
 * First in, first out, so every waiting pump still gets its item in turn.
 */
const waiting: (() => void)[] = [];
let waitingHead = 0;
let releaseScheduled = false;

function waitForTurn(): Promise<void> {
  return new Promise<void>((resolve) => {
    waiting.push(resolve);
    scheduleRelease();
  });
}

function scheduleRelease(): void {
  if (releaseScheduled) return;
  releaseScheduled = true;
  nextTurn(() => {
    releaseScheduled = false;
    const until = Math.min(waiting.length, waitingHead + ITEMS_PER_TURN);
    for (; waitingHead < until; waitingHead++) waiting[waitingHead]!();
    if (waitingHead === waiting.length) {
      waiting.length = 0;
      waitingHead = 0;
    } else {
      // Compact once the woken part is half the queue, so it never grows past twice the pumps that wait.
      if (waitingHead * 2 >= waiting.length) {
        waiting.splice(0, waitingHead);
        waitingHead = 0;
      }
      scheduleRelease();
    }
  });
}

/** Pull-based sources are simply not pulled while the call's buffer, or its connection's, is full (§8). */
async function pumpIterable(call: LiveCall, source: AsyncIterable<unknown>): Promise<void> {
  let iterator: AsyncIterator<unknown>;
  try {
    iterator = source[Symbol.asyncIterator]();
  } catch (error) {
    call.fail(error);
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
    while (!call.ended) {
      if (call.mustWait) await call.waitForRoom();
      // An iterator that never really waits, behind a transport that is never full,
      // would otherwise hold the event loop: give sockets, timers and other calls a turn.
      else if (turnBudgetSpent()) await waitForTurn();
      if (call.ended) return;
      const step = await iterator.next();
      if (step.done) return call.complete();
      call.next(step.value);
    }
  } catch (error) {
    call.fail(error);
  }
}

function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value === 'object') return value.constructor?.name ?? 'an object';
  return typeof value;
}
