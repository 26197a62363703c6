import type { Identity } from '../../dispatcher/index.js';
import { isLoopbackName } from '../../protocol/index.js';
import { validatePolicy, type Authenticate, type OriginPolicy } from '../../transports/index.js';
import { tokenAuthenticator, type TokenEntry } from '../tokens.js';

/** Who may reach the server and call it (spec §10). */
export interface AccessOptions {
  /** Default 127.0.0.1. Any other address needs tokens. */
  readonly host?: string;
  readonly tokens?: readonly TokenEntry[];
  /** Web page origins allowed to connect besides the server's own (spec §10.1); `*` needs tokens. */
  readonly allowOrigins?: readonly string[];
  /** Host names accepted besides loopback ones while listening on loopback (DNS rebinding, §10.1). */
  readonly allowHosts?: readonly string[];
}

export interface Access {
  readonly host: string;
  readonly hasTokens: boolean;
  readonly authenticate: Authenticate;
  /** Local callers' identity on a server without tokens; null when every caller needs a token. */
  readonly anonymousIdentity: Identity | null;
  readonly originPolicy: OriginPolicy;
}

/** The access rules, checked before anything starts: a server that would be open to anyone never listens. */
export function serverAccess(options: AccessOptions): Access {
  const host = options.host ?? '127.0.0.1';
  const tokens = options.tokens ?? [];
  if (!isLoopbackName(host) && tokens.length === 0) {
    throw new Error(
      `refusing to listen on ${host} without tokens: anyone who can reach it could run commands. ` +
        'Configure tokens (CALLWIRE_TOKENS or --tokens FILE), or listen on 127.0.0.1.',
    );
  }
  const originPolicy: OriginPolicy = {
    allowOrigins: options.allowOrigins ?? [],
    allowHosts: (options.allowHosts ?? []).map((h) => h.toLowerCase()),
    checkHost: isLoopbackName(host),
  };
  validatePolicy(originPolicy, tokens.length > 0);
  return {
    host,
    hasTokens: tokens.length > 0,
    authenticate: tokenAuthenticator(tokens),
    // spec §10: with no tokens the server is loopback-only, and local callers have full access.
    anonymousIdentity: tokens.length === 0 ? { subject: 'local', scopes: ['*'] } : null,
    originPolicy,
  };
}
