import { isProtocolCode, RpcError } from '../protocol/index.js';

/**
 * Terminal outcomes of a one-shot invocation (the CLI's `call` and `exec`, an HTTP
 * call) and their exit codes (docs/cli.md "Exit codes"): the one home of this table.
 */
export const outcomes = {
  success: { exit: 0, execExit: 0, meaning: 'the call reached its terminal event without error' },
  operation_failure: { exit: 1, execExit: 125, meaning: 'the operation answered with a domain error (for exec: the engine refused)' },
  infrastructure_failure: { exit: 2, execExit: 123, meaning: 'connecting, the transport, the server (INTERNAL) or output delivery failed' },
  cancelled: { exit: 3, execExit: 130, meaning: 'cancelled by SIGINT or SIGTERM' },
  timeout: { exit: 4, execExit: 124, meaning: 'a deadline expired (--timeout, or the server TIMEOUT)' },
  unsupported: { exit: 5, execExit: 120, meaning: 'unknown operation or wrong operation type' },
  invalid_input: { exit: 6, execExit: 121, meaning: 'bad flags, bad JSON, or the server INVALID_INPUT' },
  forbidden: { exit: 7, execExit: 122, meaning: 'authentication or access control refused the call' },
} as const;

export type Outcome = keyof typeof outcomes;
export type Boundary = 'none' | 'input' | 'connect' | 'negotiation' | 'validation' | 'execution' | 'output';

export interface Classified {
  readonly outcome: Outcome;
  readonly boundary: Boundary;
}

/** Which protocol error code means which outcome (docs/cli.md "Outcome mapping"). */
export const codeOutcomes: Readonly<Record<string, Classified>> = {
  NOT_FOUND: { outcome: 'unsupported', boundary: 'negotiation' },
  INVALID_OPERATION_TYPE: { outcome: 'unsupported', boundary: 'negotiation' },
  FORBIDDEN: { outcome: 'forbidden', boundary: 'validation' },
  INVALID_INPUT: { outcome: 'invalid_input', boundary: 'validation' },
  PAYLOAD_TOO_LARGE: { outcome: 'invalid_input', boundary: 'validation' },
  INVALID_FRAME: { outcome: 'invalid_input', boundary: 'validation' },
  TIMEOUT: { outcome: 'timeout', boundary: 'execution' },
  CANCELLED: { outcome: 'cancelled', boundary: 'execution' },
  INTERNAL: { outcome: 'infrastructure_failure', boundary: 'execution' },
  UNAVAILABLE: { outcome: 'infrastructure_failure', boundary: 'connect' },
  LIMIT_EXCEEDED: { outcome: 'infrastructure_failure', boundary: 'execution' },
  SLOW_CONSUMER: { outcome: 'infrastructure_failure', boundary: 'output' },
  DUPLICATE_CALL_ID: { outcome: 'infrastructure_failure', boundary: 'execution' },
  // The call runs on elsewhere; here, as for a lost connection, its end is unknown (RSM-10).
  RESUMED_ELSEWHERE: { outcome: 'infrastructure_failure', boundary: 'connect' },
};

/**
 * An error's outcome. Codes the operation declares (not protocol codes) are
 * operation failures; anything unrecognisable is an infrastructure failure.
 */
export function classify(error: unknown): Classified {
  if (error instanceof CallerInputError) return { outcome: 'invalid_input', boundary: 'input' };
  if (!(error instanceof RpcError)) return { outcome: 'infrastructure_failure', boundary: 'execution' };
  const known = codeOutcomes[error.code];
  if (known) return known;
  if (isProtocolCode(error.code)) return { outcome: 'infrastructure_failure', boundary: 'execution' };
  return { outcome: 'operation_failure', boundary: 'execution' };
}

/** Bad flags, an unreadable body, bad JSON: the caller's mistake, found before any call. */
export class CallerInputError extends Error {
  override readonly name = 'CallerInputError';
}

/**
 * Deadline beats cancellation, which beats an ordinary error, when several
 * happened (docs/cli.md "Outcome mapping").
 */
export function precedence(candidates: readonly Classified[]): Classified | undefined {
  const rank = (c: Classified): number => (c.outcome === 'timeout' ? 0 : c.outcome === 'cancelled' ? 1 : 2);
  return [...candidates].sort((a, b) => rank(a) - rank(b))[0];
}
