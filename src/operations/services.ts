import { infoContract, statsContract, type ServerInfo, type ServerLimits } from '../contracts/index.js';
import { defineOperation, type Operation, type CallTable, type Identity } from '../dispatcher/index.js';

export interface ServiceSources {
  /** The server's open connections' calls, every transport's. */
  readonly callTables: () => Iterable<CallTable>;
  /** Exec kills that failed (spec §12, EXEC-5). */
  readonly execKillFailures: () => number;
  /** Connections on every listener: open, refused over `maxConnections`, closed by `handshakeTimeoutMs` (spec §9). */
  readonly connections?: () => { readonly open: number; readonly refused: number; readonly timedOut: number };
  /** The limits in force (spec §9). */
  readonly limits: ServerLimits;
  /** Resumable calls (spec §4.9): kept, waiting for their caller, and the bytes of output kept for them. */
  readonly resumable?: () => { readonly kept: number; readonly detached: number; readonly replayBytes: number };
  /** A fleet gateway's hosts and their state (docs/fleet.md). */
  /** The fleet's hosts this caller may reach (`host:` scopes, docs/fleet.md "Security"). */
  readonly fleetHosts?: (identity: Identity | null) => NonNullable<ServerInfo['fleet']>['hosts'];
}

/**
 * `services/stats` and `services/info` (spec §11.8), beside discovery's
 * `services/list` and `services/schema`: what the server is doing, and what it
 * offers, so clients and the conformance runner ask rather than assume.
 */
export function serviceOperations(sources: ServiceSources): Operation[] {
  const stats = defineOperation({
    ...statsContract,
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
        ...(sources.resumable ? resumableStats(sources.resumable()) : {}),
      };
    },
  });
  const info = defineOperation({
    ...infoContract,
    handler: (_input, ctx) => ({
      protocol: 'callwire.v1' as const,
      limits: sources.limits,
      identity: ctx.identity ? { subject: ctx.identity.subject, scopes: [...ctx.identity.scopes] } : null,
      ...(sources.fleetHosts ? { fleet: { hosts: sources.fleetHosts(ctx.identity) } } : {}),
    }),
  });
  return [stats, info];
}

function resumableStats(r: { readonly kept: number; readonly detached: number; readonly replayBytes: number }) {
  return { resumableCalls: r.kept, detachedCalls: r.detached, replayBytes: r.replayBytes };
}
