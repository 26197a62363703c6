import { Observable } from '../rx/index.js';
import { listContract, schemaContract, type Contract, type InputOf, type OperationSpec, type OperationSummary, type OutputOf, type SubscriptionContract, type UnaryContract } from '../contracts/index.js';
import { envelopes, RpcError, type Carrier, type Envelope, type RequestedPayload } from '../protocol/index.js';
import type { AcknowledgementPolicy } from './acknowledgements.js';
import { ClientCall, type ClientCallOptions } from './client-call.js';
import type { ClientConnection } from './connection.js';
import { pulled, type PulledCall, type StreamConsumer } from './pulled.js';
import type { ConnectionEvent } from './resuming-connection.js';
import { HandedOn, StreamCall, type ServerSide, type StartHandlers } from './stream-call.js';

export interface CallOptions {
  /** Aborting it sends `call.aborted` and fails the call with CANCELLED. */
  readonly signal?: AbortSignal;
  /** Sent as `deadline_ms`; the client also gives up shortly after it passes. */
  readonly deadlineMs?: number;
  /** A token for this call only (`auth_token`), e.g. from a browser. */
  readonly token?: string;
  /** The call id; by default a short one unique to this client. Unique among this connection's live calls. */
  readonly id?: string;
  /**
   * The call's input stream (spec §4.7), for operations that take one: each item is
   * sent as the callee grants credit, then `call.end`. Taken only as fast as the
   * callee's handler consumes, so a large source is never read ahead of it.
   */
  readonly input?: AsyncIterable<unknown>;
  /** Output credit for a stream (spec §4.8): what the server may send ahead of the consumer. Default 1 MiB. */
  readonly windowBytes?: number;
  /**
   * Called once the server has admitted a stream (its first `call.credit`, CR-1), or,
   * from a server that sends none, with its first value or terminal event.
   */
  readonly onAdmitted?: () => void;
  /**
   * A stream that outlives a lost connection (spec §4.9): the server keeps it for up to
   * `graceMs` (capped by the server) while this client dials again, and it goes on
   * with no gap and no duplicate. Needs a client made with `connect(url, { resume })`,
   * whose streams ask for it by default; `false` turns it off for this call.
   */
  readonly resume?: { readonly graceMs: number } | false;
  /** The server made the stream resumable (§4.9): its token, a secret, and grace. */
  readonly onResumable?: (token: string, graceMs: number) => void;
  /** The server took the stream up again (its `call.resumed`): the last input it has. */
  readonly onResumed?: (inputSeq: number) => void;
  /**
   * A resumable stream's server has its input up to `inputSeq` (an input credit's `seq`, or
   * a resume's `input_seq`, §4.9): a caller that relays the input to this server from a
   * caller of its own (a fleet gateway) tells that caller it has no more than this.
   */
  readonly onInputAcknowledged?: (inputSeq: number) => void;
  /**
   * When a resumable stream acknowledges the items it received (§4.9), and when the server
   * may forget it once ended. By default each item is acknowledged as it arrives (once per
   * burst); a caller that relays the stream to a caller of its own (a fleet gateway)
   * acknowledges only what that caller has, so the server keeps what it may still need.
   */
  readonly acknowledgements?: AcknowledgementPolicy;
}

/** A resumable stream to take up by its token (§4.9), after output `seq`, kept for `graceMs` if lost again. */
export interface TakeUp {
  readonly id: string;
  readonly token: string;
  readonly seq: number;
  readonly graceMs: number;
}

/** An operation named by its contract (types inferred) or by its name (for operations this client does not know). */
type Target = Contract | string;
/** A stream is a new call of an operation, or one taken up by its token (§4.9). */
type StreamStart = { readonly operation: string; readonly input: unknown } | { readonly takeUp: TakeUp };
const nameOf = (target: Target): string => (typeof target === 'string' ? target : target.name);

/** The output credit a stream starts with and renews by halves (spec §4.8). */
const DEFAULT_WINDOW_BYTES = 1024 * 1024;

/** A unary call's ClientCall options: none (no output window, the default acknowledgements). */
const UNARY_CALL: ClientCallOptions = {};

// How long past its deadline the client waits for the server's TIMEOUT before giving up itself.
const DEADLINE_GRACE_MS = 1000;

/** A connected client: unary calls, subscriptions and discovery over one connection. */
export type { OperationSummary, OperationSpec };

export class Client {
  // Call ids: this client's random prefix and a counter, e.g. `k3x9q2-1f`. Never reused
  // by this client; an id a caller passes in `options.id` would have to guess the prefix
  // to collide. A UUID was 36 of a 100 B item's ~170 frame bytes, and hashing it for the
  // call table showed with 10,000 calls live.
  private readonly idPrefix = `${crypto.randomUUID().slice(0, 6)}-`;
  private idCounter = 0;
  private readonly listeners = new Set<(event: ConnectionEvent) => void>();

  constructor(
    private readonly connection: ClientConnection,
    /** Sent as `auth_token` on every call when the transport could not send a header. */
    private readonly callToken?: string,
    /** What every stream asks by default: to outlive a lost connection (§4.9). Only a reconnecting connection can use it. */
    private readonly defaultResume?: { readonly graceMs: number },
  ) {}

  /**
   * Hears `reconnecting` (the connection was lost; resumable calls wait) and `resumed`
   * (a new connection is up and they go on), on a client made with `resume`.
   * Returns a function that stops listening.
   */
  on(type: ConnectionEvent['type'], listener: (event: ConnectionEvent) => void): () => void {
    const filtered = (event: ConnectionEvent): void => {
      if (event.type === type) listener(event);
    };
    this.listeners.add(filtered);
    return () => this.listeners.delete(filtered);
  }

  /** Called by the reconnecting connection. */
  emit(event: ConnectionEvent): void {
    for (const listener of [...this.listeners]) listener(event);
  }

  get closed(): Promise<void> {
    return this.connection.closed;
  }

  /** What the connection rides: a WebSocket, or WebTransport over HTTP/2 or HTTP/3. */
  get carrier(): Carrier {
    return this.connection.carrier;
  }

  close(): Promise<void> {
    return this.connection.close();
  }

  /** One-shot call: resolves with the output, rejects with RpcError. */
  call<C extends UnaryContract>(contract: C, input: InputOf<C>, options?: CallOptions): Promise<OutputOf<C>>;
  call<T = unknown>(operation: string, input?: unknown, options?: CallOptions): Promise<T>;
  call<T>(target: Target, input: unknown = null, options: CallOptions = {}): Promise<T> {
    const operation = nameOf(target);
    return new Promise<T>((resolve, reject) => {
      let settled = false;
      const finish = (fn: () => void, server: ServerSide = 'forget'): void => {
        if (settled) return;
        settled = true;
        if (server === 'abort') call.abort(); // before cleanup, which forgets the call
        cleanup();
        fn();
      };
      const { call, cleanup } = this.start(operation, input, 'unary', options, {
        frame: (e) => {
          if (e.type === 'call.responded') finish(() => resolve(e.payload.output as T));
          else if (e.type === 'call.error') finish(() => reject(RpcError.fromPayload(e.payload)));
          else if (e.type === 'call.completed') finish(() => reject(new RpcError('INTERNAL', 'server sent call.completed for a unary call')));
        },
        fail: (error, server) => finish(() => reject(error), server),
      });
    });
  }

  /**
   * A subscription as an Observable; unsubscribing sends `call.aborted`. Each value
   * is granted back to the server once the subscriber's `next` has returned (§4.8),
   * so a subscriber that blocks holds the stream at the server.
   */
  subscribe<C extends SubscriptionContract>(contract: C, input: InputOf<C>, options?: CallOptions): Observable<OutputOf<C>>;
  subscribe<T = unknown>(operation: string, input?: unknown, options?: CallOptions): Observable<T>;
  subscribe<T>(target: Target, input: unknown = null, options: CallOptions = {}): Observable<T> {
    return new Observable<T>((subscriber) => {
      const call = this.openStream({ operation: nameOf(target), input }, options, {
        value: (value, bytes) => {
          subscriber.next(value as T);
          call.release(bytes);
        },
        complete: () => subscriber.complete(),
        error: (error) => subscriber.error(error),
      });
      return () => call.cancel();
    });
  }

  /**
   * The same subscription as an async iterable, pulled: the server may send only
   * what the loop has taken plus one window (§4.8), so a loop that stops pulling
   * holds the stream, and the process that feeds it, at the server. Leaving the loop
   * early aborts the call.
   */
  iterate<C extends SubscriptionContract>(contract: C, input: InputOf<C>, options?: CallOptions): AsyncIterable<OutputOf<C>>;
  iterate<T = unknown>(operation: string, input?: unknown, options?: CallOptions): AsyncIterable<T>;
  iterate<T>(target: Target, input: unknown = null, options: CallOptions = {}): AsyncIterable<T> {
    const operation = nameOf(target);
    return pulled((consumer) => this.openStream({ operation, input }, options, consumer));
  }

  /**
   * Takes up a resumable stream this client did not start (§4.9), by its token: another
   * client's, whose connection is gone. Pulled as `iterate` is, from the item after
   * `seq`; `options.input` goes on from the last input the server has. Needs a client
   * made with `connect(url, { resume })`. A token the server does not hold for this
   * caller fails the iteration with its `NOT_FOUND`.
   */
  takeUp<T = unknown>(call: TakeUp, options: CallOptions = {}): AsyncIterable<T> {
    if (!this.connection.keep) throw new TypeError('taking up a call needs a client made with resume');
    return pulled((consumer) => this.openStream({ takeUp: call }, { ...options, id: call.id }, consumer));
  }

  /**
   * One streaming call: asks for output credit (`credit` in the request, §4.8),
   * which its ClientCall grants again as the consumer `release`s what it took, sends
   * `options.input` as the server grants input credit (§4.7), and reports values and the end.
   */
  private openStream(what: StreamStart, options: CallOptions, consumer: StreamConsumer): PulledCall {
    const id = options.id ?? this.nextId();
    const streamOptions = { ...options, id, windowBytes: options.windowBytes ?? DEFAULT_WINDOW_BYTES };
    return new StreamCall(consumer, options).open((handlers) =>
      'takeUp' in what ? this.startTakeUp(what.takeUp, streamOptions, handlers) : this.start(what.operation, what.input, 'stream', streamOptions, handlers),
    );
  }

  listOperations(options: CallOptions = {}): Promise<OperationSummary[]> {
    return this.call(listContract, null, options).then((r) => r.operations);
  }

  schema(name: string, options: CallOptions = {}): Promise<OperationSpec> {
    return this.call(schemaContract, { name }, options);
  }

  private nextId(): string {
    return this.idPrefix + (++this.idCounter).toString(36);
  }

  private start(
    operation: string,
    input: unknown,
    expect: 'unary' | 'stream',
    options: CallOptions,
    handlers: StartHandlers,
  ): { call: ClientCall; cleanup: () => void } {
    const id = options.id ?? this.nextId();
    const payload: RequestedPayload = { operationId: operation, input, expect };
    const windowBytes = options.windowBytes ?? DEFAULT_WINDOW_BYTES;
    if (expect === 'stream') {
      payload.credit = windowBytes;
      const resume = options.resume ?? this.defaultResume;
      if (resume) payload.resume = { grace_ms: Math.max(1, Math.ceil(resume.graceMs)) };
    }
    const token = options.token ?? this.callToken;
    if (token !== undefined) payload.auth_token = token;
    if (options.deadlineMs !== undefined) payload.deadline_ms = Math.max(1, Math.ceil(options.deadlineMs));
    const request = envelopes.requested(id, payload);
    return this.begin(request, options, handlers, expect === 'stream' ? { windowBytes } : UNARY_CALL);
  }

  /** A stream taken up by its token: its `call.resume` is its request (§4.9). */
  private startTakeUp(call: TakeUp, options: CallOptions, handlers: StartHandlers): { call: ClientCall; cleanup: () => void } {
    const token = options.token ?? this.callToken;
    const windowBytes = options.windowBytes ?? DEFAULT_WINDOW_BYTES;
    const resume = envelopes.resume(call.id, {
      token: call.token,
      seq: call.seq,
      credit: windowBytes,
      ...(token === undefined ? {} : { auth_token: token }),
    });
    return this.begin(resume, options, handlers, { windowBytes, graceMs: call.graceMs });
  }

  /** The call's ClientCall, started on the connection, with its cancellation, deadline and cleanup. */
  private begin(request: Envelope, options: CallOptions, handlers: StartHandlers, callOptions: ClientCallOptions): { call: ClientCall; cleanup: () => void } {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const onAbort = (): void => handlers.fail(new RpcError('CANCELLED', 'the call was cancelled by the caller'), 'abort');
    const call = new ClientCall(
      request,
      new HandedOn(handlers),
      options.acknowledgements || options.onInputAcknowledged
        ? { ...callOptions, acknowledgements: options.acknowledgements, onInputAcknowledged: options.onInputAcknowledged }
        : callOptions,
    );
    const cleanup = (): void => {
      if (timer !== undefined) clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
      call.done();
    };
    if (options.signal?.aborted) {
      // Never started: the call is not carried, and nothing reaches the server.
      queueMicrotask(() => handlers.fail(new RpcError('CANCELLED', 'the call was cancelled before it started'), 'forget'));
      return { call, cleanup: () => undefined };
    }
    if (this.connection.keep) this.connection.keep(call);
    else call.attach(this.connection);
    options.signal?.addEventListener('abort', onAbort, { once: true });
    if (options.deadlineMs !== undefined) {
      timer = setTimeout(
        () => handlers.fail(new RpcError('TIMEOUT', `no answer within the ${options.deadlineMs} ms deadline`), 'abort'),
        options.deadlineMs + DEADLINE_GRACE_MS,
      );
    }
    return { call, cleanup };
  }
}
