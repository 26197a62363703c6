import { RpcError, type Carrier, type Codec, type Envelope } from '../protocol/index.js';
import type { CallKeeper, ClientCall } from './client-call.js';
import type { CallChannel, CallSink, ClientConnection } from './connection.js';

/** What a reconnecting connection tells its client (spec/PROTOCOL.md §4.9). */
export type ConnectionEvent =
  /** The connection was lost; `calls` resumable calls wait to be taken up again. */
  | { readonly type: 'reconnecting'; readonly calls: number; readonly reason: string }
  /** The server took call `id` up again on a new connection (its `call.resumed`): it goes on. */
  | { readonly type: 'resumed'; readonly id: string };

export interface ResumingOptions {
  /** Makes a new connection to the same server, with the same codec. */
  readonly dial: () => Promise<ClientConnection>;
  /** The first wait before dialling again; doubled on each failure up to `maxDelayMs`, with jitter. */
  readonly initialDelayMs?: number;
  readonly maxDelayMs?: number;
}

/**
 * A client connection that survives losing its carrier (spec/PROTOCOL.md §4.9): when the
 * connection breaks, it dials again with backoff and jitter and attaches every call it
 * keeps to the new one, where each `ClientCall` resumes itself after the last item that
 * arrived. Calls that are not resumable fail with the connection, as on a plain one.
 */
export class ResumingConnection implements ClientConnection, CallKeeper {
  private current: ClientConnection | undefined;
  private readonly calls = new Set<ClientCall>();
  private reconnecting = false;
  private closing = false;
  /** Ends the wait before the next dial at once (the client closed). */
  private backoff: (() => void) | undefined;
  /** Hears `reconnecting` and `resumed` (the client that rides this connection). */
  onEvent: ((event: ConnectionEvent) => void) | undefined;
  private closedResolve: () => void = () => undefined;
  readonly closed = new Promise<void>((resolve) => (this.closedResolve = resolve));
  private lastCodec!: Codec;
  private lastCarrier!: Carrier;

  constructor(
    first: ClientConnection,
    private readonly options: ResumingOptions,
  ) {
    this.adopt(first);
  }

  get codec(): Codec {
    return this.current?.codec ?? this.lastCodec;
  }

  get carrier(): Carrier {
    return this.current?.carrier ?? this.lastCarrier;
  }

  /** Carries `call` on the connection up now, or on the next one dialled, and again on each after a loss. */
  keep(call: ClientCall): void {
    this.calls.add(call);
    call.keptBy(this);
    if (this.current) call.attach(this.current);
    else this.reconnect('no connection is up');
  }

  /** A call not kept: it rides the connection up now and fails with it. */
  startCall(request: Envelope, sink: CallSink): CallChannel {
    if (this.current && !this.closing) return this.current.startCall(request, sink);
    queueMicrotask(() => sink.lost(new RpcError('UNAVAILABLE', 'no connection is up')));
    return { abort: () => undefined, done: () => undefined, send: () => 0 };
  }

  forget(id: string): void {
    if (!this.closing) this.current?.forget(id);
  }

  detached(call: ClientCall, error: RpcError): void {
    if (this.closing) return call.fail(error);
    this.reconnect(error.message);
  }

  resumed(call: ClientCall): void {
    this.onEvent?.({ type: 'resumed', id: call.id });
  }

  release(call: ClientCall): void {
    this.calls.delete(call);
  }

  /**
   * Closes for good. With `reason` (a server gone for good: a fleet host that stopped
   * answering) every call fails with it now, rather than after its grace or as the
   * transport words the close.
   */
  async close(reason?: RpcError): Promise<void> {
    this.closing = true;
    this.backoff?.();
    if (reason) for (const call of [...this.calls]) call.fail(reason);
    const closing = this.current?.close();
    if (!reason) await closing;
    // Calls waiting for a connection, to start or to be taken up again, end with the client.
    this.failWaiting(new RpcError('CANCELLED', 'the client closed its connection'));
    this.closedResolve();
  }

  private adopt(connection: ClientConnection): void {
    this.current = connection;
    this.lastCodec = connection.codec;
    this.lastCarrier = connection.carrier;
    void connection.closed.then(() => {
      if (this.current !== connection) return;
      this.current = undefined;
      if (this.closing) return this.closedResolve();
      // Calls on it have heard `lost`; with none to resume, dial again only for the next call.
      if (this.waiting().length > 0) this.reconnect('the connection was lost');
    });
  }

  /** Calls no connection carries: resumable ones the callee keeps first, then ones never started. */
  private waiting(): ClientCall[] {
    const waiting = [...this.calls].filter((call) => !call.attached);
    return [...waiting.filter((call) => call.detached), ...waiting.filter((call) => !call.detached)];
  }

  private reconnect(reason: string): void {
    if (this.reconnecting || this.closing) return;
    this.reconnecting = true;
    this.onEvent?.({ type: 'reconnecting', calls: this.waiting().filter((call) => call.detached).length, reason });
    void this.dialLoop().finally(() => (this.reconnecting = false));
  }

  private async dialLoop(): Promise<void> {
    const initial = this.options.initialDelayMs ?? 100;
    const max = this.options.maxDelayMs ?? 1000;
    for (let attempt = 0; !this.closing; attempt++) {
      const now = Date.now();
      // Calls whose grace has passed are gone at the callee: they fail here, never end as if complete.
      for (const call of this.waiting()) call.expireIfPast(now);
      if (this.waiting().length === 0) return;
      // Full jitter over half the step: many clients cut at once do not all come back at once.
      const step = Math.min(max, initial * 2 ** attempt);
      await this.pause(step / 2 + Math.random() * (step / 2));
      if (this.closing) return;
      let connection: ClientConnection;
      try {
        connection = await this.options.dial();
      } catch (error) {
        // Refused, or the caller gave up (a signal): dialling again cannot help.
        if (error instanceof RpcError && (error.code === 'FORBIDDEN' || error.code === 'CANCELLED')) return this.failWaiting(error);
        continue;
      }
      if (this.closing) return void connection.close();
      this.adopt(connection);
      for (const call of this.waiting()) call.attach(connection);
      return;
    }
  }

  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.backoff = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  private failWaiting(error: RpcError): void {
    for (const call of this.waiting()) call.fail(error);
  }
}
