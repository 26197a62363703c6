import type { Identity } from '../dispatcher/index.js';

/** Resolves a bearer token to an identity; undefined for unknown tokens. */
export type Authenticate = (token: string) => Identity | undefined;

/** Reads `Authorization: Bearer <token>`; undefined when absent or of another scheme. */
export function bearerToken(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match?.[1];
}
