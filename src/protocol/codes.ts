/**
 * The closed table of protocol error codes (spec/PROTOCOL.md §6). Operations add
 * their own domain codes on top; those are declared per operation.
 */
export interface CodeInfo {
  readonly retryable: boolean;
  readonly meaning: string;
}

export const protocolCodes = {
  NOT_FOUND: { retryable: false, meaning: 'Unknown operation, or an internal operation called from the wire.' },
  FORBIDDEN: { retryable: false, meaning: 'Access control denied the call; "authentication required" when there is no identity.' },
  INVALID_INPUT: { retryable: false, meaning: 'The input fails the operation input schema; the message names the field and the problem.' },
  INTERNAL: { retryable: false, meaning: 'The handler threw something undeclared, or the machinery failed.' },
  TIMEOUT: { retryable: true, meaning: 'The call deadline passed before the call ended.' },
  INVALID_OPERATION_TYPE: { retryable: false, meaning: 'The caller expected a unary answer from a subscription, or the reverse.' },
  DUPLICATE_CALL_ID: { retryable: false, meaning: 'A call.requested reused the id of a call that is still live on this connection.' },
  LIMIT_EXCEEDED: { retryable: true, meaning: "The connection already has the maximum number of calls in flight, or the caller's identity its maximum of live calls or exec sessions (§9)." },
  PAYLOAD_TOO_LARGE: { retryable: false, meaning: 'The call.requested frame is larger than the input size limit.' },
  INVALID_FRAME: { retryable: false, meaning: 'The frame decoded but is not a valid envelope; sent for the frame id when it is readable.' },
  CREDIT_EXCEEDED: { retryable: false, meaning: 'The caller sent more input than the callee granted (§4.7), or the callee more output than the caller granted (§4.8, CR-7: client side).' },
  SLOW_CONSUMER: { retryable: true, meaning: "A push-based stream outran the per-call buffer towards a slow peer, or a call's output came while its identity held maxOutboundBytesPerIdentity of output its readers had not taken (§8)." },
  UNAVAILABLE: { retryable: true, meaning: 'The server is shutting down or out of a resource of its own (descriptors, memory) for the call, or the connection was lost (client side).' },
  CANCELLED: { retryable: false, meaning: 'The caller cancelled the call (client side only; a server never sends it).' },
  RESUMED_ELSEWHERE: { retryable: false, meaning: 'A resume on another connection took the call from this one (§4.9, RSM-10): it runs on there, and this connection gets nothing more of it.' },
} as const satisfies Record<string, CodeInfo>;

export type ProtocolCode = keyof typeof protocolCodes;

export function isProtocolCode(code: unknown): code is ProtocolCode {
  return typeof code === 'string' && Object.hasOwn(protocolCodes, code);
}

/**
 * Connection-fatal problems are WebSocket close codes, in their own table (§5.2).
 */
export const closeCodes = {
  NORMAL: 1000,
  GOING_AWAY: 1001,
  /** Never sent: what a peer reports when the connection ended without a close frame (it broke). */
  ABNORMAL: 1006,
  /** A text message arrived; only binary messages carry envelopes. */
  TEXT_MESSAGE: 1002,
  /** A message was larger than maxFrameBytes. */
  FRAME_TOO_LARGE: 1009,
  /** A message did not decode with the negotiated codec, or carried no readable id. */
  UNDECODABLE_FRAME: 4400,
} as const;

export type CloseCode = (typeof closeCodes)[keyof typeof closeCodes];

/**
 * The reason a server gives with GOING_AWAY when it is shutting down (§4.9): its calls end
 * with it, so a client takes none of them up again. A proxy that restarts may send 1001
 * too, with its own reason or none: that close is a lost connection, and calls resume.
 */
export const SHUTDOWN_REASON = 'server shutting down';

/** A close that says the server itself is going away, not a proxy or a broken carrier. */
export function isServerShutdown(code: number, reason: string): boolean {
  return code === closeCodes.GOING_AWAY && reason === SHUTDOWN_REASON;
}
