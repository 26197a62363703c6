import type { Logger } from '../../dispatcher/index.js';
import { limits as protocolLimits } from '../../protocol/index.js';
import { ConnectionGuard } from '../../transports/index.js';

/** What every listener's connections are held to (spec §9, §5.5). */
export interface ConnectionOptions {
  /** WebSocket ping interval in ms (spec §5.5); 0 turns keepalive off. Default 30 s. */
  readonly keepaliveMs?: number;
  /** Open connections on every listener together; more are closed unread (spec §9, maxConnections). Default 10,000. */
  readonly maxConnections?: number;
  /** A connection that completes no request, upgrade or session request this long after it opens is closed (LIM-4); 0: never. Default 10 s. */
  readonly handshakeTimeoutMs?: number;
}

export interface Connections {
  readonly keepaliveMs: number;
  readonly maxConnections: number;
  readonly handshakeTimeoutMs: number;
  /** Counts and bounds the connections of every listener together. */
  readonly guard: ConnectionGuard;
}

export function connectionRules(options: ConnectionOptions, logger: Logger): Connections {
  const maxConnections = options.maxConnections ?? protocolLimits.maxConnections;
  const handshakeTimeoutMs = options.handshakeTimeoutMs ?? protocolLimits.handshakeTimeoutMs;
  return {
    keepaliveMs: options.keepaliveMs ?? protocolLimits.keepaliveMs,
    maxConnections,
    handshakeTimeoutMs,
    guard: new ConnectionGuard({ maxConnections, handshakeTimeoutMs, logger }),
  };
}
