import { describeZodError, RpcError, type RequestedPayload } from '../protocol/index.js';
import { checkAccess } from './access.js';
import type { Identity } from './identity.js';
import type { IdentityLedger } from './identity-ledger.js';
import type { IdentityOutbound } from './identity-outbound.js';
import type { DispatcherLimits } from './limits.js';
import { isUnary, type Operation } from './operation.js';
import type { Registry } from './registry.js';

/** A call as its caller asked for it, whatever carried it: a `call.requested` frame, an HTTP request, a function call. */
export interface CallRequest {
  readonly id: string;
  /** What a `call.requested` carries (spec/PROTOCOL.md §4.1). */
  readonly payload: RequestedPayload;
  /** The request's size as it arrived (its frame, its body), held to `maxInputBytes`. */
  readonly sizeBytes: number;
}

/** What admission needs of the server: its operations, tokens, limits and per-identity caps. */
export interface AdmissionRules {
  readonly registry: Registry;
  readonly limits: DispatcherLimits;
  readonly authenticate: ((token: string) => Identity | undefined) | undefined;
  readonly ledger: IdentityLedger;
  /** Each identity's output its readers have not taken (§8), which its calls add to. */
  readonly outbound: IdentityOutbound;
}

export interface Admitted {
  readonly op: Operation;
  readonly input: unknown;
  readonly identity: Identity | null;
  /** Gives back what the call holds of its identity's caps (LIM-3); run when it ends. */
  readonly release: () => void;
}

/**
 * spec/PROTOCOL.md §4.1, REQ-2 … REQ-7 in order (the connection checks REQ-1, the id,
 * first): the call's operation, identity, shape and input, or the refusal it hears.
 */
export function admit(rules: AdmissionRules, request: CallRequest, connectionIdentity: Identity | null): Admitted | RpcError {
  const { limits } = rules;
  const { payload } = request;
  if (request.sizeBytes > limits.maxInputBytes) {
    return RpcError.of('PAYLOAD_TOO_LARGE', `request of ${request.sizeBytes} bytes exceeds maxInputBytes ${limits.maxInputBytes}`);
  }
  const op = rules.registry.visible(payload.operationId);
  if (!op) return RpcError.of('NOT_FOUND', `unknown operation: ${truncate(payload.operationId, 200)}`);
  const identity = callerIdentity(rules, payload.auth_token, connectionIdentity);
  if (identity instanceof RpcError) return identity;
  const denied = checkAccess(op.access, identity);
  if (denied) return denied;
  const shape = isUnary(op) ? 'unary' : 'stream';
  if (payload.expect !== undefined && payload.expect !== shape) {
    return RpcError.of('INVALID_OPERATION_TYPE', `${op.name} is a ${op.kind}: expect "${shape}", not "${payload.expect}"`);
  }
  const input = op.input.safeParse(payload.input ?? null);
  if (!input.success) return RpcError.of('INVALID_INPUT', describeZodError(input.error));
  // LIM-3: last, so a call that would be refused anyway hears its own reason.
  // An operation that runs a command (it reports a command's end) is an exec session.
  const release = rules.ledger.take(identity, op.commandEnd !== undefined);
  if (release instanceof RpcError) return release;
  return { op, input: input.data, identity, release };
}

/** Who makes a call: the identity of its `auth_token` when it carries one (§10), else its connection's. */
export function callerIdentity(rules: AdmissionRules, authToken: string | undefined, connectionIdentity: Identity | null): Identity | null | RpcError {
  if (authToken === undefined) return connectionIdentity;
  return rules.authenticate?.(authToken) ?? RpcError.of('FORBIDDEN', 'invalid token'); // AUTH-1
}

export function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}…`;
}

/** ID-2: the refusal of a request whose id is live on the connection. */
export function duplicateCallId(id: string): RpcError {
  return RpcError.of('DUPLICATE_CALL_ID', `call id "${truncate(id, 40)}" is already live on this connection`);
}
