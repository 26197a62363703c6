import { decodeEnvelope, envelopes, type Codec, type Envelope, type RpcError } from '../protocol/index.js';
import type { CallChannel, CallSink } from './connection.js';

/**
 * The calls of one message-carrying connection, by id: a request goes out through `send`,
 * each frame that comes back reaches its call's sink, and the connection's end reaches
 * them all. For a connection whose frames arrive one by one from a carrier of its own
 * (a fleet link, the in-process connection), so each does not keep its own copy.
 */
export class CallRoutes {
  private readonly sinks = new Map<string, CallSink>();

  constructor(private readonly send: (envelope: Envelope) => number) {}

  /** Sends `request` and gives its channel; frames for its id go to `sink` until it is done or aborted. */
  start(request: Envelope, sink: CallSink): CallChannel {
    const id = request.id;
    this.sinks.set(id, sink);
    this.send(request);
    return {
      abort: () => {
        if (this.sinks.delete(id)) this.send(envelopes.aborted(id));
      },
      done: () => void this.sinks.delete(id),
      send: (envelope) => (this.sinks.has(id) ? this.send(envelope) : 0),
    };
  }

  /** A call on a connection already closed: it hears `error` on the next turn, and its channel does nothing. */
  static refused(sink: CallSink, error: RpcError): CallChannel {
    queueMicrotask(() => sink.lost(error));
    return { abort: () => undefined, done: () => undefined, send: () => 0 };
  }

  /** An encoded frame that arrived: to its call, if it is still here (a frame of an aborted call is dropped). */
  deliver(codec: Codec, body: Uint8Array): void {
    const parsed = decodeEnvelope(codec, body);
    if (parsed.kind === 'event') this.sinks.get(parsed.envelope.id)?.frame(parsed.envelope, body.byteLength);
  }

  /** The connection ended: every call still here hears `error`, once. */
  loseAll(error: RpcError): void {
    const sinks = [...this.sinks.values()];
    this.sinks.clear();
    for (const sink of sinks) sink.lost(error);
  }
}
