import { RpcError } from '../protocol/index.js';
import type { Identity } from './identity.js';
import type { AccessControl } from './operation.js';

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
