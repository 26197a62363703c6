import { z } from 'zod';
import { defineContract } from './contract.js';

const count = z.number().int();

/** The limits in force (spec §9), as `services/info` announces them. */
export const serverLimits = z.object({
  maxFrameBytes: count,
  maxInputBytes: count,
  maxNestingDepth: count,
  maxCallIdBytes: count,
  maxCallsInFlight: count,
  maxBufferedBytesPerCall: count,
  maxOutboundBytesPerConnection: count,
  /** §8: optional, as a server before the bound does not say. */
  maxOutboundBytesPerIdentity: count.optional(),
  maxDeadlineMs: count,
  keepaliveMs: count,
  maxCallsPerIdentity: count,
  maxExecSessionsPerIdentity: count,
  maxConnections: count,
  handshakeTimeoutMs: count,
  /** §4.9: 0 when calls never outlive their connection. Optional: a server before resumable calls does not say. */
  maxResumeMs: count.optional(),
  maxReplayBytesPerCall: count.optional(),
  maxReplayBytesPerIdentity: count.optional(),
  maxReplayBytes: count.optional(),
});

/** What `services/info` answers (spec §11.8). */
export const serverInfo = z.object({
  protocol: z.literal('callwire.v1'),
  limits: serverLimits,
  /** Null when the caller is anonymous. */
  identity: z.object({ subject: z.string(), scopes: z.array(z.string()) }).nullable(),
  /** A fleet gateway's hosts (docs/fleet.md): each with its state, from its agent's heartbeats. Absent on a single server. */
  fleet: z
    .object({
      hosts: z.array(z.object({ id: z.string(), state: z.enum(['up', 'down']), engine: z.enum(['up', 'down']), containers: count, lastSeenMs: count })),
    })
    .optional(),
});

/** What `services/stats` answers (spec §11.8). */
export const serverStats = z.object({
  /** Connections on every transport. */
  connections: count,
  liveCalls: count,
  callsStarted: count,
  /** Exec kills that failed (spec §12, EXEC-5). */
  execKillFailures: count,
  /** Connections on the listeners (spec §9): open, refused over maxConnections, closed by handshakeTimeoutMs. */
  openConnections: count,
  refusedConnections: count,
  silentConnectionsClosed: count,
  /** Resumable calls kept (§4.9), and those of them waiting for their caller after a lost connection. */
  resumableCalls: count.optional(),
  detachedCalls: count.optional(),
  /** Bytes of output kept for resumable calls (§4.9, RSM-3). */
  replayBytes: count.optional(),
});

export type ServerLimits = z.output<typeof serverLimits>;
export type ServerInfo = z.output<typeof serverInfo>;
export type ServerStats = z.output<typeof serverStats>;

export const infoContract = defineContract({
  name: 'services/info',
  kind: 'query',
  description: "The protocol version, the limits in force (spec §9) and the caller's identity (null when anonymous).",
  input: z.null(),
  output: serverInfo,
});

export const statsContract = defineContract({
  name: 'services/stats',
  kind: 'query',
  description:
    "Connections and live calls on this server (the caller's own stats call included), failed exec kills, and the " +
    'connections on its listeners: open, refused over maxConnections, and closed for completing no request within handshakeTimeoutMs.',
  input: z.null(),
  output: serverStats,
});
