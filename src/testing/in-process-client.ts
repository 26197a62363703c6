import { randomUUID } from 'node:crypto';
import type { CallEvent, CallOutlet, CallTable, Dispatcher, Identity, LiveCall, Sized } from '../dispatcher/index.js';
import { RpcError } from '../protocol/index.js';
import { Wakeup } from '../flow/index.js';

/**
 * What one item waiting for its consumer counts against its call's buffer (BP-1): in
 * memory an item has no encoded size, and a consumer that stops pulling must still
 * stop a pull source after a few items, not after a million.
 */
const ITEM_BYTES = 16 * 1024;

export interface InProcessCallOptions {
  /** Ends the call with TIMEOUT after this many milliseconds (DL-1). */
  readonly deadlineMs?: number;
  /** A per-call token, as `auth_token` (spec §10). */
  readonly authToken?: string;
}

/** A stream call in progress: its outputs, in order, and its way to stop or to feed it. */
export interface InProcessStream extends AsyncIterable<unknown> {
  readonly id: string;
  /** One item of the call's input stream (§4.7). */
  input(item: unknown): void;
  /** No more input. */
  end(): void;
  /** call.aborted: the handler is cancelled, and the iteration ends (ABT-1). */
  abort(): void;
}

/**
 * Calls a dispatcher's operations in the same process, with no frames and no codec:
 * the third adapter over the call engine beside frames and HTTP. Each call gets the
 * engine's admission, validation, deadlines, caps and backpressure, as a remote one
 * would. A unary call resolves to its output; a stream is an async iterable that
 * throws the call's RpcError.
 */
export class InProcessClient {
  private readonly calls: CallTable;

  constructor(
    dispatcher: Dispatcher,
    private readonly identity: Identity | null = dispatcher.anonymousIdentity,
  ) {
    this.calls = dispatcher.connect();
  }

  /** A query or mutation's one answer; rejects with the call's RpcError. */
  async call(operationId: string, input: unknown, options: InProcessCallOptions = {}): Promise<unknown> {
    const stream = this.stream(operationId, input, options, 'unary');
    for await (const output of stream) return output;
    throw new RpcError('INTERNAL', 'the call ended without an answer');
  }

  /** A subscription's items as they come; the iteration ends at `call.completed`. */
  stream(operationId: string, input: unknown, options: InProcessCallOptions = {}, expect: 'unary' | 'stream' = 'stream'): InProcessStream {
    const id = randomUUID();
    const queue: { event: CallEvent; taken: () => void }[] = [];
    const arrived = new Wakeup();
    const outlet: CallOutlet<Sized & { readonly event: CallEvent }> = {
      encode: (event) => ({ byteLength: event.type === 'output' ? ITEM_BYTES : 0, event }),
      send: ({ event }) =>
        new Promise<void>((taken) => {
          if (event.type === 'credit') return taken();
          queue.push({ event, taken });
          arrived.wake();
        }),
    };
    const request = {
      id,
      payload: {
        operationId,
        input,
        expect,
        ...(options.deadlineMs === undefined ? {} : { deadline_ms: options.deadlineMs }),
        ...(options.authToken === undefined ? {} : { auth_token: options.authToken }),
      },
      sizeBytes: 0,
    };
    const started: LiveCall | RpcError = this.calls.start(request, this.identity, outlet);
    const call = started instanceof RpcError ? undefined : started;
    if (started instanceof RpcError) queue.push({ event: { type: 'error', error: started }, taken: () => undefined });
    let done = false;
    return {
      id,
      input: (item) => call?.pushInput(item, 0),
      end: () => call?.endInput(),
      abort: () => {
        done = true;
        call?.cancel();
        arrived.wake();
      },
      async *[Symbol.asyncIterator]() {
        try {
          while (!done) {
            const next = queue.shift();
            if (!next) {
              await arrived.wait();
              continue;
            }
            next.taken();
            const { event } = next;
            if (event.type === 'error') throw event.error;
            if (event.type === 'completed') return;
            if (event.type === 'output') {
              yield event.output;
              if (event.final) return;
            }
          }
        } finally {
          // A consumer that stops early (break, return) aborts its call.
          if (call && !call.ended) call.cancel();
        }
      },
    };
  }

  /** Cancels every call still live. */
  close(): void {
    this.calls.close();
  }
}
