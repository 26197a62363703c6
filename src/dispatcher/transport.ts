import type { Codec } from '../protocol/index.js';

/**
 * What a FrameConnection needs from its transport. Transports implement it; the dispatcher
 * never imports a transport, and no transport looks inside a frame.
 */
export interface FrameTransport {
  readonly codec: Codec;
  /**
   * Writes one encoded envelope on the connection (WebSocket: one message). Resolves
   * when the transport has taken the bytes off the FrameConnection's hands; the FrameConnection
   * counts unresolved bytes per call for backpressure (§8). Rejects when the
   * connection is gone.
   */
  send(frame: Uint8Array): Promise<void>;
  /** Closes the whole connection with a close code of spec/PROTOCOL.md §5.2. */
  close(code: number, reason: string): void;
  /**
   * BP-4: whether more than `maxOutboundBytesPerConnection` bytes of every kind
   * wait in the connection's one channel; the transport counts them, and calls the
   * FrameConnection's `drained()` when it is no longer congested. Absent: a transport whose
   * calls each have their own flow control (a stream per call), never congested.
   */
  readonly congested?: () => boolean;
}

/**
 * A byte stream that carries one call (a WebTransport bidirectional stream, §5.4),
 * as the transport offers it to the FrameConnection.
 */
export interface StreamSink {
  /** Writes one encoded envelope (the transport adds the length prefix). */
  write(frame: Uint8Array): Promise<void>;
  /** Ends our sending side (FIN), after the call's terminal event. */
  end(): void;
  /** Resets the stream: its first frame is no request, or a frame on it is unreadable (WT-1, ENV-5, WT-3). */
  reset(reason: string): void;
}

/** The FrameConnection's side of one stream: the transport hands it every frame body it reads. */
export interface StreamEntry {
  receive(body: Uint8Array): void;
  /** The caller ended its sending side (FIN). */
  end(): void;
  /** The caller reset the stream, or it failed. */
  reset(): void;
  /**
   * Before each read: a promise while the stream must not be read (a shared stream
   * while the connection's shared streams hold their bound of unsent bytes, WTS-3).
   */
  whenReadable?(): Promise<void> | undefined;
}
