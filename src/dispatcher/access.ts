import { RpcError } from '../protocol/index.js';
import type { Identity } from './identity.js';
import type { AccessControl } from './operation.js';

/** spec/PROTOCOL.md §10: all of `requiredScopes`, one of `requiredScopesAny`. */
export function checkAccess(access: AccessControl | undefined, identity: Identity | null): RpcError | undefined {
  const all = access?.requiredScopes ?? [];
  const any = access?.requiredScopesAny ?? [];
  if (all.length === 0 && any.length === 0) return undefined;
  if (identity === null) return RpcError.of('FORBIDDEN', 'authentication required');
  const missing = all.filter((scope) => !identity.scopes.includes(scope));
  if (missing.length > 0) return RpcError.of('FORBIDDEN', `missing scope: ${missing.join(', ')}`);
  if (any.length > 0 && !any.some((scope) => identity.scopes.includes(scope))) {
    return RpcError.of('FORBIDDEN', `requires one of the scopes: ${any.join(', ')}`);
  }
  return undefined;
}
