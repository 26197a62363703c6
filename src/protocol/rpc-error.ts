import { isProtocolCode, protocolCodes, type ProtocolCode } from './codes.js';
import type { ErrorPayload } from './envelope.js';

/**
 * The one error class for call failures, on both sides of the wire
 * (spec/PROTOCOL.md §6). `code` is a protocol code or an operation's declared code.
 */
export class RpcError extends Error {
  override readonly name = 'RpcError';
  readonly code: string;
  readonly retryable: boolean;
  readonly details: unknown;

  constructor(code: string, message: string, options: { retryable?: boolean; details?: unknown; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.retryable = options.retryable ?? (isProtocolCode(code) ? protocolCodes[code].retryable : false);
    this.details = options.details;
  }

  static of(code: ProtocolCode, message: string, details?: unknown): RpcError {
    return new RpcError(code, message, details === undefined ? {} : { details });
  }

  /** Normalises anything thrown into an RpcError; non-RpcErrors become INTERNAL. */
  static from(error: unknown): RpcError {
    if (error instanceof RpcError) return error;
    if (error instanceof Error && error.name === 'AbortError') {
      return new RpcError('UNAVAILABLE', 'the call was aborted', { cause: error, retryable: false });
    }
    const message = error instanceof Error ? error.message : typeof error === 'string' ? error : 'unknown error';
    return new RpcError('INTERNAL', message, { cause: error });
  }

  /** Builds the client-side error from a received `call.error` payload. */
  static fromPayload(payload: ErrorPayload): RpcError {
    return new RpcError(payload.code, payload.message, { retryable: payload.retryable, details: payload.details });
  }

  toPayload(): ErrorPayload {
    const payload: ErrorPayload = { code: this.code, message: this.message, retryable: this.retryable };
    if (this.details !== undefined) payload.details = this.details;
    return payload;
  }
}
