import type { Codec } from '../protocol/index.js';

/**
 * The tiny interface a session needs from a connection. Transports implement it;
 * the dispatcher never imports a transport.
 */
export interface SessionTransport {
  readonly codec: Codec;
  /**
   * Writes one encoded envelope for call `callId`. Resolves when the transport has
   * taken the bytes off the session's hands (flushed to the socket, accepted by the
   * stream); the session counts unresolved bytes per call for backpressure (§8).
   * `final` marks the call's terminal frame, after which a per-call stream may close.
   * Rejects when the connection is gone.
   */
  send(callId: string, frame: Uint8Array, final: boolean): Promise<void>;
  /** Closes the whole connection with a close code of spec/PROTOCOL.md §5.2. */
  close(code: number, reason: string): void;
}
