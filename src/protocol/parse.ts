import type { z } from 'zod';
import { callIdSchema, envelopeSchema, rawEnvelopeSchema, type Envelope } from './envelope.js';
import { isEventType } from './event-types.js';
import { knownEnvelopeOf } from './known-envelope.js';
import { ProtocolError } from './protocol-error.js';

/**
 * Result of validating one decoded value as an envelope (spec/PROTOCOL.md §3).
 * Unknown event types are not errors: receivers ignore and count them (§3.3).
 */
export type ParseResult =
  | { readonly kind: 'event'; readonly envelope: Envelope }
  | { readonly kind: 'unknown-type'; readonly type: string; readonly id: string }
  /** `type` is the frame's type when it was readable (a string), for the precedence rules of §3.4. */
  | { readonly kind: 'invalid'; readonly error: ProtocolError; readonly type?: string };

export function parseEnvelope(value: unknown): ParseResult {
  const known = knownEnvelopeOf(value);
  return known ? { kind: 'event', envelope: known } : parseEnvelopeBySchema(value);
}

/** parseEnvelope through the schemas alone: what decides every frame the hand check leaves to them (known-envelope.ts). */
export function parseEnvelopeBySchema(value: unknown): ParseResult {
  // A frame of a known type is checked against its full schema first: one pass for the
  // common case (two for every frame were a fifth of a client's time reading a stream
  // of small items). A frame that passes it passes the raw schema too (every payload
  // schema is an object); one that fails is checked against the raw schema, which
  // decides which error it gets (§3.4), and keeps the full schema's error otherwise.
  const type = readType(value);
  const full = type !== undefined && isEventType(type) ? envelopeSchema.safeParse(value) : undefined;
  if (full?.success) return { kind: 'event', envelope: full.data };
  const raw = rawEnvelopeSchema.safeParse(value);
  if (!raw.success) {
    return { kind: 'invalid', error: toProtocolError(raw.error, readId(value)), ...(type === undefined ? {} : { type }) };
  }
  if (!full) return { kind: 'unknown-type', type: raw.data.type, id: raw.data.id };
  return { kind: 'invalid', error: toProtocolError(full.error, raw.data.id), type: raw.data.type };
}

/**
 * A readable id (spec §3.4): the frame is a map whose `id` is a string of 1 to
 * `maxCallIdBytes` UTF-8 bytes. Only a readable id can be answered.
 */
function readId(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const id: unknown = (value as Record<string, unknown>)['id'];
  return callIdSchema.safeParse(id).success ? (id as string) : undefined;
}

function readType(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const type: unknown = (value as Record<string, unknown>)['type'];
  return typeof type === 'string' ? type : undefined;
}

/** Names the first offending field, e.g. `payload.operationId: expected string`. */
export function toProtocolError(error: z.ZodError, callId: string | undefined): ProtocolError {
  const issue = error.issues[0];
  const field = issue && issue.path.length > 0 ? issue.path.map(String).join('.') : '(frame)';
  const message = `${field}: ${issue?.message ?? 'invalid'}`;
  return new ProtocolError('INVALID_ENVELOPE', message, field, callId);
}

/** Formats a zod error as one line naming the field path, for INVALID_INPUT messages. */
export function describeZodError(error: z.ZodError, root = 'input'): string {
  return error.issues
    .slice(0, 3)
    .map((issue) => {
      const path = [root, ...issue.path.map(String)].join('.');
      return `${path}: ${issue.message}`;
    })
    .join('; ');
}
