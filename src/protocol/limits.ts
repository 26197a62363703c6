/**
 * Protocol limits and their defaults. Every name carries its unit.
 * Normative text: spec/PROTOCOL.md §9 (Limits).
 */
export const limits = {
  /** Largest encoded envelope accepted on any transport (§9). */
  maxFrameBytes: 16 * 1024 * 1024,
  /** Largest encoded `call.requested` frame; larger ones get PAYLOAD_TOO_LARGE (§9). */
  maxInputBytes: 4 * 1024 * 1024,
  /**
   * Maps and arrays one frame may nest, the envelope itself the first; a deeper frame is
   * refused before it is decoded, as undecodable (§9, LIM-2).
   */
  maxNestingDepth: 64,
  /** Longest call id, in UTF-8 bytes (§3). */
  maxCallIdBytes: 128,
  /** Calls one connection may have live at once; more get LIMIT_EXCEEDED (§9). */
  maxCallsInFlight: 4096,
  /** Encoded bytes the server holds for one call towards a slow peer (§8). */
  maxBufferedBytesPerCall: 1024 * 1024,
  /**
   * Encoded bytes a connection's socket has not yet taken; above it the callee stops
   * reading that peer's frames until half of it has drained (§8, BP-3).
   */
  maxOutboundBytesPerConnection: 8 * 1024 * 1024,
  /**
   * Encoded bytes of one identity's output its readers have not taken (waiting for a
   * transport or for credit), over all its connections: at the bound an output ends its
   * call with SLOW_CONSUMER; from half of it waiting for transports, its sources are not
   * pulled (§8).
   */
  maxOutboundBytesPerIdentity: 256 * 1024 * 1024,
  /** WebSocket ping interval; a peer silent for a whole interval after a ping is gone (§5.5). */
  keepaliveMs: 30_000,
  /** Live calls of one identity over all its connections; more get LIMIT_EXCEEDED (§9, LIM-3). */
  maxCallsPerIdentity: 16_384,
  /** Live exec sessions (`docker/container/exec`) of one identity; more get LIMIT_EXCEEDED (§9, LIM-3). */
  maxExecSessionsPerIdentity: 256,
  /** Open connections on all of a server's listeners together; more are closed unread (§9). */
  maxConnections: 10_000,
  /** How long a new connection may take to complete its first request, upgrade or session request (§9, LIM-4). */
  handshakeTimeoutMs: 10_000,
  /** Longest grace a resumable call is kept for after its connection is lost; longer asks are capped (§4.9). 0: no resume. */
  maxResumeMs: 60_000,
  /** Output of one resumable call kept for a replay, sent or not, until its caller acknowledges it (§4.9). */
  maxReplayBytesPerCall: 1024 * 1024,
  /** The same, over all the resumable calls of one identity (§4.9). */
  maxReplayBytesPerIdentity: 256 * 1024 * 1024,
  /** The same, over all the resumable calls of the server (§4.9). */
  maxReplayBytes: 1024 * 1024 * 1024,
  /** Longest deadline a caller may ask for; larger values are clamped (§7). */
  maxDeadlineMs: 24 * 60 * 60 * 1000,
  /** Length of the big-endian length prefix on byte streams (§5.1). */
  framePrefixBytes: 4,
} as const;

export type Limits = typeof limits;
