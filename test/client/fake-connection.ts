import type { CallSink, ClientConnection } from '../../src/client/index.js';
import { envelopes, jsonCodec, RpcError, type Envelope } from '../../src/protocol/index.js';

/**
 * A connection in memory, for the client's state machines: it records every envelope the
 * client sends, delivers the frames a test plays as the callee, and drops like a socket.
 */
export class FakeConnection implements ClientConnection {
  readonly codec = jsonCodec;
  readonly carrier = 'websocket' as const;
  /** Every envelope the client sent on it, in order (requests, input, grants, aborts). */
  readonly sent: Envelope[] = [];
  private readonly sinks = new Map<string, CallSink>();
  private resolveClosed: () => void = () => undefined;
  readonly closed = new Promise<void>((resolve) => (this.resolveClosed = resolve));

  startCall(request: Envelope, sink: CallSink): ReturnType<ClientConnection['startCall']> {
    this.sent.push(request);
    this.sinks.set(request.id, sink);
    const id = request.id;
    return {
      abort: () => {
        if (this.sinks.delete(id)) this.sent.push(envelopes.aborted(id));
      },
      done: () => void this.sinks.delete(id),
      send: (envelope) => {
        if (!this.sinks.has(id)) return 0;
        this.sent.push(envelope);
        return this.size(envelope);
      },
    };
  }

  forget(id: string): void {
    this.sent.push(envelopes.aborted(id));
  }

  /** The callee sends `envelope`. */
  deliver(envelope: Envelope): void {
    this.sinks.get(envelope.id)?.frame(envelope, this.size(envelope));
  }

  /** The carrier breaks: every call on it hears `lost`, then the connection is closed. */
  drop(reason = 'the connection was lost'): void {
    const sinks = [...this.sinks.values()];
    this.sinks.clear();
    for (const sink of sinks) sink.lost(new RpcError('UNAVAILABLE', reason));
    this.resolveClosed();
  }

  close(): Promise<void> {
    this.drop('connection closed');
    return this.closed;
  }

  size(envelope: Envelope): number {
    return this.codec.encode(envelope).byteLength;
  }

  /** What was sent of `type`, as the envelopes were. */
  of(type: Envelope['type']): Envelope[] {
    return this.sent.filter((e) => e.type === type);
  }
}
