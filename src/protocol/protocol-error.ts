/**
 * A problem with bytes or frames, below the level of a call: framing, decoding and
 * envelope validation all fail with this one typed error. `callId` is set when the
 * frame was readable enough to answer the offending call with `call.error`.
 */
export type ProtocolErrorKind =
  | 'FRAME_EMPTY'
  | 'FRAME_TOO_LARGE'
  | 'FRAME_TOO_DEEP'
  | 'FRAME_TRUNCATED'
  | 'UNDECODABLE'
  | 'INVALID_ENVELOPE';

export class ProtocolError extends Error {
  override readonly name = 'ProtocolError';
  constructor(
    readonly kind: ProtocolErrorKind,
    message: string,
    readonly field?: string,
    readonly callId?: string,
  ) {
    super(message);
  }
}
