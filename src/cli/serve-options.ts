import type { DockerEngine, ServerOptions, TokenEntry } from '../server/index.js';
import type { GatewaySettings } from '../fleet/index.js';
import type { ServeFlags } from './commands/serve.js';
import { stderrLogger } from './logger.js';

/** What `serve` read or found before its options: the tokens, the TLS files' contents, the fleet's settings, the engine. */
export interface ServeSources {
  readonly tokens: readonly TokenEntry[];
  readonly tls: { readonly certPem: string; readonly keyPem: string } | undefined;
  readonly fleet: GatewaySettings | undefined;
  readonly docker: DockerEngine;
}

/**
 * `callwire serve`'s flags as the library's options: every flag's parsing and its
 * message, in the CLI's words; the library only ever sees values.
 */
export function serveOptions(flags: ServeFlags, sources: ServeSources): ServerOptions {
  return {
    host: flags.host,
    port: port(flags.port, '--port'),
    webTransportPort: flags.webtransport ? port(flags.wtPort, '--wt-port') : false,
    tokens: sources.tokens,
    conformance: flags.conformance === true,
    // The application offers Docker when an engine answers; the library only when asked.
    docker: sources.docker,
    limits: {
      ...(flags.maxCallsInFlight ? { maxCallsInFlight: positive(flags.maxCallsInFlight, '--max-calls-in-flight') } : {}),
      ...(flags.maxInputBytes ? { maxInputBytes: positive(flags.maxInputBytes, '--max-input-bytes') } : {}),
      ...(flags.maxCallsPerIdentity ? { maxCallsPerIdentity: positive(flags.maxCallsPerIdentity, '--max-calls-per-identity') } : {}),
      ...(flags.maxExecSessionsPerIdentity ? { maxExecSessionsPerIdentity: positive(flags.maxExecSessionsPerIdentity, '--max-exec-sessions-per-identity') } : {}),
      ...(flags.maxOutboundBytesPerIdentity ? { maxOutboundBytesPerIdentity: positive(flags.maxOutboundBytesPerIdentity, '--max-outbound-bytes-per-identity') } : {}),
      maxResumeMs: seconds(flags.maxResume, '--max-resume') * 1000,
    },
    ...(flags.maxConnections ? { maxConnections: positive(flags.maxConnections, '--max-connections') } : {}),
    handshakeTimeoutMs: seconds(flags.handshakeTimeout, '--handshake-timeout') * 1000,
    logger: stderrLogger(flags.logLevel),
    allowOrigins: flags.allowOrigin,
    allowHosts: flags.allowHost,
    keepaliveMs: seconds(flags.keepalive, '--keepalive') * 1000,
    http3: flags.http3,
    metrics: flags.metrics,
    ...(flags.socket ? { socketPath: flags.socket } : {}),
    ...(flags.audit ? { auditPath: flags.audit } : {}),
    ...(flags.record ? { recordDir: flags.record, recordPolicy: recordPolicy(flags) } : {}),
    ...(sources.tls ? { tls: sources.tls } : {}),
    ...(sources.fleet ? { fleet: sources.fleet } : {}),
  };
}

/** The recordings' policy from the flags; a cap under 4 KiB would not hold a header and its closing events. */
function recordPolicy(flags: ServeFlags): { maxBytes?: number; reserveBytes?: number; strict: boolean } {
  const maxBytes = flags.recordMaxBytes ? positive(flags.recordMaxBytes, '--record-max-bytes') : undefined;
  if (maxBytes !== undefined && maxBytes < 4096) throw new Error(`--record-max-bytes must be at least 4096, not "${flags.recordMaxBytes}"`);
  return {
    ...(maxBytes !== undefined ? { maxBytes } : {}),
    ...(flags.recordReserveBytes ? { reserveBytes: positive(flags.recordReserveBytes, '--record-reserve-bytes') } : {}),
    strict: flags.recordStrict === true,
  };
}

function port(value: string, flag: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new Error(`${flag} must be a port number, not "${value}"`);
  return n;
}

function seconds(value: string, flag: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n < 0) throw new Error(`${flag} must be a number of seconds (0 or more), not "${value}"`);
  return n;
}

function positive(value: string, flag: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${flag} must be a whole number of at least 1, not "${value}"`);
  return n;
}
