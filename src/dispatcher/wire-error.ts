import { RpcError, type ProtocolCode } from '../protocol/index.js';
import type { Operation } from './operation.js';

// Protocol codes a handler may raise itself, for checks a schema cannot express (§4.5); CREDIT_EXCEEDED
// is a relay's (a fleet gateway's) whose upstream sent past the credit it was granted (CR-7).
const handlerCodes: ReadonlySet<ProtocolCode> = new Set(['INVALID_INPUT', 'FORBIDDEN', 'NOT_FOUND', 'TIMEOUT', 'UNAVAILABLE', 'CREDIT_EXCEEDED']);

/**
 * What a handler failure looks like on the wire (spec/PROTOCOL.md §4.5, ERR-4):
 * declared codes pass with validated details; anything else becomes INTERNAL with
 * the original code kept in `details.originalCode`. No stack ever leaves.
 */
export function toWireError(op: Operation, thrown: unknown): RpcError {
  const error = RpcError.from(thrown);
  const declared = op.errors?.[error.code];
  if (declared) {
    if (declared.details && error.details !== undefined) {
      const parsed = declared.details.safeParse(error.details);
      if (!parsed.success) return internal(error, 'details do not match the declared schema');
      return new RpcError(error.code, error.message, { retryable: error.retryable, details: parsed.data });
    }
    return new RpcError(error.code, error.message, { retryable: error.retryable, details: error.details });
  }
  if (handlerCodes.has(error.code as ProtocolCode)) return new RpcError(error.code, error.message, { details: error.details });
  if (error.code === 'INTERNAL') return new RpcError('INTERNAL', error.message);
  return internal(error, 'undeclared error code');
}

function internal(error: RpcError, why: string): RpcError {
  return new RpcError('INTERNAL', `${error.message} (${why} ${error.code})`, { details: { originalCode: error.code } });
}

/** RSM-10: the end a connection hears of a call another connection took up (§4.9). */
export function resumedElsewhere(): RpcError {
  return RpcError.of('RESUMED_ELSEWHERE', 'the call was resumed on another connection; this one gets nothing more of it');
}
