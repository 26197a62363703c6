import type { Carrier, Codec, Envelope, RpcError } from '../protocol/index.js';
import type { AckLimit } from './ack-limit.js';

/** Receives the frames of one call, or the news that the connection is gone. */
export interface CallSink {
  /** `bytes`: the frame's encoded size, for output credit (§4.8). */
  frame(envelope: Envelope, bytes: number): void;
  lost(error: RpcError): void;
  /** A resumable call's output is acknowledged no further than this (a relay's own caller, §4.9). */
  readonly ackLimit?: AckLimit;
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
  close(): Promise<void>;
  /** Resolves when the connection is closed, by either side. */
  readonly closed: Promise<void>;
}
