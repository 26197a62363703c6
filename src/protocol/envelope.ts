import { z } from 'zod';
import { limits } from './limits.js';

/**
 * Frame shapes: the one source of truth (spec/PROTOCOL.md §3–§4).
 * Types are inferred from these schemas; every inbound frame is validated here.
 */

const utf8 = new TextEncoder();

/** Whether a string is short enough for a call id (§3.2): at most `maxCallIdBytes` UTF-8 bytes. */
export function fitsCallId(id: string): boolean {
  // A UTF-16 code unit encodes to at most 3 UTF-8 bytes: short ids need no encoding (it was 5% of a client's time).
  return id.length * 3 <= limits.maxCallIdBytes || utf8.encode(id).byteLength <= limits.maxCallIdBytes;
}

export const callIdSchema = z
  .string()
  .min(1, 'must not be empty')
  .refine(fitsCallId, { message: `must be at most ${limits.maxCallIdBytes} UTF-8 bytes` });

/** §4.1 — extra fields are allowed so later versions can add hints. */
export const requestedPayloadSchema = z.looseObject({
  operationId: z.string().min(1, 'must not be empty'),
  input: z.unknown().optional(),
  auth_token: z.string().optional(),
  deadline_ms: z.number().int('must be an integer').positive('must be positive').optional(),
  expect: z.enum(['unary', 'stream']).optional(),
  /** §4.8: the caller's first grant for the call's output, in encoded bytes; asks for output credit. */
  credit: z.number().int('must be an integer').positive('must be positive').optional(),
  /** §4.9: asks that the call outlive its connection for up to `grace_ms`. */
  resume: z.strictObject({ grace_ms: z.number().int('must be an integer').positive('must be positive') }).optional(),
});

/** §4.9 — a sequence number of a resumable call's output or input; counts from 1. */
const seqSchema = z.number().int('must be an integer').min(0, 'must not be negative');

/** §4.2 — the key `output` must be present; its value may be anything, null included. */
export const respondedPayloadSchema = z
  .looseObject({ output: z.unknown(), seq: seqSchema.optional() })
  .refine((p) => Object.hasOwn(p, 'output'), { message: 'output is required', path: ['output'] });

/** §4.3 and §4.4 — always empty. */
export const completedPayloadSchema = z.strictObject({});
export const abortedPayloadSchema = z.strictObject({});

/** §4.5 */
export const errorPayloadSchema = z.looseObject({
  code: z.string().min(1, 'must not be empty'),
  message: z.string(),
  retryable: z.boolean(),
  details: z.unknown().optional(),
});

/** §4.7 — one item of the call's input stream; its schema is the operation's. */
export const inputPayloadSchema = z
  .strictObject({ item: z.unknown(), seq: seqSchema.optional() })
  .refine((p) => Object.hasOwn(p, 'item'), { message: 'item is required', path: ['item'] });

/** §4.7 — the end of the call's input stream (a half-close). */
export const endPayloadSchema = z.strictObject({ seq: seqSchema.optional() });

/** §4.7 — grants the peer that many more encoded bytes on this call. */
export const creditPayloadSchema = z.strictObject({
  bytes: z.number().int('must be an integer').min(0, 'must not be negative'),
  /** §4.9: on a resumable call, the last sequence number the sender has received from the other side. */
  seq: seqSchema.optional(),
});

/** §4.9 — the callee's word that a call may be resumed with `token` for `grace_ms` after its connection is lost. */
export const resumablePayloadSchema = z.strictObject({
  token: z.string().min(1, 'must not be empty').max(256, 'must be at most 256 characters'),
  grace_ms: z.number().int('must be an integer').positive('must be positive'),
});

/** §4.9 — the caller takes a call up again on a new connection. */
export const resumePayloadSchema = z.strictObject({
  token: z.string().min(1, 'must not be empty').max(256, 'must be at most 256 characters'),
  /** The last output sequence number the caller received; what follows is sent again. */
  seq: seqSchema,
  /** A fresh output window (§4.8). */
  credit: z.number().int('must be an integer').positive('must be positive'),
  auth_token: z.string().optional(),
});

/** §4.9 — the callee's answer to an accepted `call.resume`. */
export const resumedPayloadSchema = z.strictObject({
  /** The last input sequence number the callee received; the caller sends what follows again. */
  input_seq: seqSchema,
  /** The caller's input credit as the callee counts it (§4.7): the caller's credit is now this. */
  input_credit: z.number().int('must be an integer'),
});

export const envelopeSchema = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('call.requested'), id: callIdSchema, payload: requestedPayloadSchema }),
  z.strictObject({ type: z.literal('call.responded'), id: callIdSchema, payload: respondedPayloadSchema }),
  z.strictObject({ type: z.literal('call.completed'), id: callIdSchema, payload: completedPayloadSchema }),
  z.strictObject({ type: z.literal('call.aborted'), id: callIdSchema, payload: abortedPayloadSchema }),
  z.strictObject({ type: z.literal('call.error'), id: callIdSchema, payload: errorPayloadSchema }),
  z.strictObject({ type: z.literal('call.input'), id: callIdSchema, payload: inputPayloadSchema }),
  z.strictObject({ type: z.literal('call.end'), id: callIdSchema, payload: endPayloadSchema }),
  z.strictObject({ type: z.literal('call.credit'), id: callIdSchema, payload: creditPayloadSchema }),
  z.strictObject({ type: z.literal('call.resumable'), id: callIdSchema, payload: resumablePayloadSchema }),
  z.strictObject({ type: z.literal('call.resume'), id: callIdSchema, payload: resumePayloadSchema }),
  z.strictObject({ type: z.literal('call.resumed'), id: callIdSchema, payload: resumedPayloadSchema }),
]);

export type Envelope = z.infer<typeof envelopeSchema>;
export type RequestedPayload = z.infer<typeof requestedPayloadSchema>;
export type RespondedPayload = z.infer<typeof respondedPayloadSchema>;
export type ErrorPayload = z.infer<typeof errorPayloadSchema>;
export type ResumePayload = z.infer<typeof resumePayloadSchema>;
export type EnvelopeOf<T extends Envelope['type']> = Extract<Envelope, { type: T }>;

/**
 * The envelope before its type is known: used to read the id of a frame we reject,
 * and to ignore a frame of an unknown type whatever its payload is (ENV-4: the
 * payload's shape belongs to that type, which this version does not know).
 */
export const rawEnvelopeSchema = z
  .looseObject({ type: z.string(), id: callIdSchema, payload: z.unknown() })
  .refine((frame) => Object.hasOwn(frame, 'payload'), { message: 'payload is required', path: ['payload'] });
