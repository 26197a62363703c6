import { z } from 'zod';
import { defineOperation, type Operation } from '../dispatcher/index.js';

const limitsSchema = z.object({
  maxFrameBytes: z.number().int(),
  maxInputBytes: z.number().int(),
  maxCallIdBytes: z.number().int(),
  maxCallsInFlight: z.number().int(),
  maxBufferedBytesPerCall: z.number().int(),
  maxOutboundBytesPerConnection: z.number().int(),
  maxDeadlineMs: z.number().int(),
  keepaliveMs: z.number().int(),
});

export type ServerLimits = z.infer<typeof limitsSchema>;

/**
 * `services/info` (spec §11.8): the protocol, the limits in force and who the caller
 * is, so a client or the conformance runner learns what this server offers instead
 * of assuming it.
 */
export function infoOperation(limits: ServerLimits): Operation {
  return defineOperation({
    name: 'services/info',
    kind: 'query',
    description: 'The protocol version, the limits in force (spec §9) and the caller\'s identity (null when anonymous).',
    input: z.null(),
    output: z.object({
      protocol: z.literal('callwire.v1'),
      limits: limitsSchema,
      identity: z.object({ subject: z.string(), scopes: z.array(z.string()) }).nullable(),
    }),
    handler: (_input, ctx) => ({
      protocol: 'callwire.v1' as const,
      limits,
      identity: ctx.identity ? { subject: ctx.identity.subject, scopes: [...ctx.identity.scopes] } : null,
    }),
  });
}
