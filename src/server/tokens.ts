import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import type { Identity } from '../dispatcher/index.js';
import type { Authenticate } from '../transports/index.js';

const tokensFileSchema = z.object({
  tokens: z.array(z.object({ token: z.string().min(16, 'tokens must be at least 16 characters'), subject: z.string().min(1), scopes: z.array(z.string()).default([]) })),
});

export type TokenEntry = z.infer<typeof tokensFileSchema>['tokens'][number];

/**
 * Tokens come from `CALLWIRE_TOKENS` (JSON) or a file (`--tokens FILE` or
 * `CALLWIRE_TOKENS_FILE`): `{"tokens": [{"token", "subject", "scopes"}]}`.
 * Errors name the source, never a token.
 */
export function loadTokens(source: { file?: string | undefined; json?: string | undefined }): TokenEntry[] {
  let text: string | undefined;
  let where = '';
  if (source.file) {
    where = `tokens file ${source.file}`;
    try {
      text = readFileSync(source.file, 'utf8');
    } catch (error) {
      throw new Error(`cannot read ${where}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`);
    }
  } else if (source.json) {
    where = 'CALLWIRE_TOKENS';
    text = source.json;
  }
  if (text === undefined) return [];
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    throw new Error(`${where} is not valid JSON`);
  }
  const parsed = tokensFileSchema.safeParse(data);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(`${where}: ${issue?.path.join('.') ?? ''}: ${issue?.message ?? 'invalid'}`);
  }
  return parsed.data.tokens;
}

const digest = (token: string): string => createHash('sha256').update(token).digest('hex');

/** Looks tokens up by their SHA-256, so the comparison does not leak token bytes by timing. */
export function tokenAuthenticator(entries: readonly TokenEntry[]): Authenticate {
  const byDigest = new Map<string, Identity>(entries.map((e) => [digest(e.token), { subject: e.subject, scopes: [...e.scopes] }]));
  return (token) => byDigest.get(digest(token));
}
