import type { Carrier, Codec, Envelope, RpcError } from '../protocol/index.js';
import type { ClientCall } from './client-call.js';

/** Receives the frames of one call, or the news that the connection is gone. */
export interface CallSink {
  /** `bytes`: the frame's encoded size, for output credit (§4.8). */
  frame(envelope: Envelope, bytes: number): void;
  /** `final`: the server said it is going away (spec §4.9), so no connection will take the call up again. */
  lost(error: RpcError, final?: boolean): void;
}

/** The client's side of one call on a connection. */
export interface CallChannel {
  /** Sends `call.aborted` and stops delivering frames for the call. */
  abort(): void;
  /** The call reached its terminal event: release what it holds. */
  done(): void;
  /** Sends one more envelope of this call (`call.input`, `call.end`); returns its encoded size. */
  send(envelope: Envelope): number;
}

/** What the client needs from a transport (WebSocket or WebTransport). */
export interface ClientConnection {
  readonly codec: Codec;
  /** What the connection rides: a WebSocket, or WebTransport over HTTP/2 or HTTP/3. */
  readonly carrier: Carrier;
  /** Sends `request` on a channel of its own and routes the call's frames to `sink`. */
  startCall(request: Envelope, sink: CallSink): CallChannel;
  /**
   * Tells the callee it may forget an ended resumable call now rather than after its grace
   * (its `call.aborted`, spec/PROTOCOL.md §4.9), once the call's own channel is done.
   */
  forget(id: string): void;
  close(): Promise<void>;
  /** Resolves when the connection is closed, by either side. */
  readonly closed: Promise<void>;
  /**
   * Present on a connection that survives losing its carrier: it carries `call` across the
   * connections it rides, resuming it on each (§4.9). Without it, a call rides this one only.
   */
  keep?(call: ClientCall): void;
}
