import { z } from 'zod';
import { defineOperation, type Operation, type CallTable } from '../dispatcher/index.js';

const limitsSchema = z.object({
  maxFrameBytes: z.number().int(),
  maxInputBytes: z.number().int(),
  maxNestingDepth: z.number().int(),
  maxCallIdBytes: z.number().int(),
  maxCallsInFlight: z.number().int(),
  maxBufferedBytesPerCall: z.number().int(),
  maxOutboundBytesPerConnection: z.number().int(),
  maxDeadlineMs: z.number().int(),
  keepaliveMs: z.number().int(),
  maxCallsPerIdentity: z.number().int(),
  maxExecSessionsPerIdentity: z.number().int(),
  maxConnections: z.number().int(),
  handshakeTimeoutMs: z.number().int(),
});

export interface ServiceSources {
  /** The server's open connections' calls, every transport's. */
  readonly callTables: () => Iterable<CallTable>;
  /** Exec kills that failed (spec §12, EXEC-5). */
  readonly execKillFailures: () => number;
  /** Connections on every listener: open, refused over `maxConnections`, closed by `handshakeTimeoutMs` (spec §9). */
  readonly connections?: () => { readonly open: number; readonly refused: number; readonly timedOut: number };
  /** The limits in force (spec §9). */
  readonly limits: z.input<typeof limitsSchema>;
}

/**
 * `services/stats` and `services/info` (spec §11.8), beside discovery's
 * `services/list` and `services/schema`: what the server is doing, and what it
 * offers, so clients and the conformance runner ask rather than assume.
 */
export function serviceOperations(sources: ServiceSources): Operation[] {
  const stats = defineOperation({
    name: 'services/stats',
    kind: 'query',
    description:
      "Connections and live calls on this server (the caller's own stats call included), failed exec kills, and the " +
      'connections on its listeners: open, refused over maxConnections, and closed for completing no request within handshakeTimeoutMs.',
    input: z.null(),
    output: z.object({
      connections: z.number().int(),
      liveCalls: z.number().int(),
      callsStarted: z.number().int(),
      execKillFailures: z.number().int(),
      openConnections: z.number().int(),
      refusedConnections: z.number().int(),
      silentConnectionsClosed: z.number().int(),
    }),
    handler: () => {
      let connections = 0;
      let liveCalls = 0;
      let callsStarted = 0;
      for (const s of sources.callTables()) {
        connections++;
        liveCalls += s.stats.liveCalls;
        callsStarted += s.stats.callsStarted;
      }
      const listeners = sources.connections?.() ?? { open: 0, refused: 0, timedOut: 0 };
      return {
        connections,
        liveCalls,
        callsStarted,
        execKillFailures: sources.execKillFailures(),
        openConnections: listeners.open,
        refusedConnections: listeners.refused,
        silentConnectionsClosed: listeners.timedOut,
      };
    },
  });
  const info = defineOperation({
    name: 'services/info',
    kind: 'query',
    description: "The protocol version, the limits in force (spec §9) and the caller's identity (null when anonymous).",
    input: z.null(),
    output: z.object({
      protocol: z.literal('callwire.v1'),
      limits: limitsSchema,
      identity: z.object({ subject: z.string(), scopes: z.array(z.string()) }).nullable(),
    }),
    handler: (_input, ctx) => ({
      protocol: 'callwire.v1' as const,
      limits: sources.limits,
      identity: ctx.identity ? { subject: ctx.identity.subject, scopes: [...ctx.identity.scopes] } : null,
    }),
  });
  return [stats, info];
}
