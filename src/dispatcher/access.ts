import { RpcError } from '../protocol/index.js';
import type { Identity } from './identity.js';
import type { AccessControl, Operation } from './operation.js';

/**
 * A scope is held exactly, or through a wildcard: `*` holds every scope and
 * `container:*` every `container:` scope (spec/PROTOCOL.md §10).
 */
export function holdsScope(identity: Identity, scope: string): boolean {
  return identity.scopes.some((held) => held === scope || held === '*' || (held.endsWith(':*') && scope.startsWith(held.slice(0, -1))));
}

/** spec/PROTOCOL.md §10: all of `requiredScopes`, one of `requiredScopesAny`. */
export function checkAccess(access: AccessControl | undefined, identity: Identity | null): RpcError | undefined {
  const all = access?.requiredScopes ?? [];
  const any = access?.requiredScopesAny ?? [];
  if (all.length === 0 && any.length === 0) return undefined;
  if (identity === null) return RpcError.of('FORBIDDEN', 'authentication required');
  const missing = all.filter((scope) => !holdsScope(identity, scope));
  if (missing.length > 0) return RpcError.of('FORBIDDEN', `missing scope: ${missing.join(', ')}`);
  if (any.length > 0 && !any.some((scope) => holdsScope(identity, scope))) {
    return RpcError.of('FORBIDDEN', `requires one of the scopes: ${any.join(', ')}`);
  }
  return undefined;
}

/**
 * A check of the caller's identity that a call's handler made as the call started (a
 * container's owner, §12; a fleet host's `host:` scope), registered through
 * `CallContext.requireOnResume`: whoever resumes the call must pass it too (RSM-9).
 */
export type IdentityCheck = (identity: Identity | null) => RpcError | undefined;

/**
 * RSM-9: whether `identity` may take up a call of `op` whose handler made `checks` of its
 * caller: the operation's scopes, by the function admission itself uses (REQ-4), then each
 * of the handler's checks, all with the identity that asks now, never the one that started it.
 */
export function checkResumeAccess(op: Operation, checks: readonly IdentityCheck[], identity: Identity | null): RpcError | undefined {
  const denied = checkAccess(op.access, identity);
  if (denied) return denied;
  for (const check of checks) {
    const refused = check(identity);
    if (refused) return refused;
  }
  return undefined;
}
