import { createServer as createHttpServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { createDispatcher, Registry, silentLogger, type Identity, type Logger, type Operation, type CallTable, type ResumeRegistry, type SessionLimits } from '../dispatcher/index.js';
import { probeOperations, discoveryOperations, dockerOperations, probeDocker, serviceOperations, type DockerEngine } from '../operations/index.js';
import { isLoopbackName, limits as protocolLimits } from '../protocol/index.js';
import { ConnectionGuard, createHttpCalls, createWebSocketTransport, findDeno, startH3Bridge, type H3Bridge, listenWebTransport, validatePolicy, type OriginPolicy, type WebTransportListener } from '../transports/index.js';
import { startGateway, type FleetGateway, type GatewaySettings } from '../fleet/index.js';
import { AppendStream } from './append-stream.js';
import { AuditFile } from './audit-file.js';
import { auditLog } from './audit-log.js';
import { combineObservers, combineRefusalObservers } from './call-observers.js';
import { certificateSha256, selfSignedCertificate } from './certificate.js';
import { createLab } from './lab.js';
import { metricsEndpoint } from './metrics-endpoint.js';
import { createMetrics, type ServerMetrics } from './metrics.js';
import { defaultRecordingPolicy, sessionRecorder, type RecordingPolicy } from './session-recorder.js';
import { listenUnix, type UnixListener } from './unix-listener.js';
import { tokenAuthenticator, type TokenEntry } from './tokens.js';

export interface ServerOptions {
  /** Default 127.0.0.1. Any other address needs tokens. */
  readonly host?: string;
  /** WebSocket port; 0 picks a free one. Default 7070. */
  readonly port?: number;
  /** WebTransport port, or false for none. Default 7071. */
  readonly webTransportPort?: number | false;
  /** PEM certificate and key; without them WebSocket is plain and WebTransport uses a fresh self-signed certificate. */
  readonly tls?: { readonly certPem: string; readonly keyPem: string };
  readonly tokens?: readonly TokenEntry[];
  /** Operations besides discovery and Docker. */
  readonly operations?: readonly Operation[];
  /** Offer the `conformance/*` operations the conformance suite drives. */
  readonly conformance?: boolean;
  /** A Docker engine whose operations to offer (`dockerEngine()` finds one as the docker CLI does); none by default. */
  readonly docker?: DockerEngine | false;
  readonly limits?: Partial<SessionLimits>;
  /** Whether WebTransport callers may open shared call streams (spec §5.4, WTS-1); default true. */
  readonly sharedStreams?: boolean;
  readonly logger?: Logger;
  /** Web page origins allowed to connect besides the server's own (spec §10.1); `*` needs tokens. */
  readonly allowOrigins?: readonly string[];
  /** Host names accepted besides loopback ones while listening on loopback (DNS rebinding, §10.1). */
  readonly allowHosts?: readonly string[];
  /** HTTP/3 when a provider is present (the native fails-components part, else the Deno edge); false: never. Default true. */
  readonly http3?: boolean;
  /** WebSocket ping interval in ms (spec §5.5); 0 turns keepalive off. Default 30 s. */
  readonly keepaliveMs?: number;
  /** Also serve the WebSocket and HTTP calls on this unix socket (mode 0600), for callers on this machine. */
  readonly socketPath?: string;
  /** Open connections on every listener together; more are closed unread (spec §9, maxConnections). Default 10,000. */
  readonly maxConnections?: number;
  /** A connection that completes no request, upgrade or session request this long after it opens is closed (LIM-4); 0: never. Default 10 s. */
  readonly handshakeTimeoutMs?: number;
  /** Append one JSON line per call to this file (created mode 0600), or to stdout for `-` (docs/cli.md "Recording and audit"). */
  readonly auditPath?: string;
  /** Record every exec with a terminal as an asciicast v2 file in this directory (created mode 0700). */
  readonly recordDir?: string;
  /** The recordings' cap, the free space kept for the audit log, and whether a session whose recording stops is ended (defaults: `defaultRecordingPolicy`). */
  readonly recordPolicy?: Partial<RecordingPolicy>;
  /** Be a fleet gateway (docs/fleet.md): the Docker operations of every agent on this NATS cluster, instead of a local engine's. */
  readonly fleet?: GatewaySettings;
  /** Serve `GET /metrics` on the HTTP port (docs/cli.md "Metrics"); with tokens it needs the scope `metrics:read`. Default true. */
  readonly metrics?: boolean;
}

export interface RunningServer {
  readonly wsUrl: string;
  /** `ws+unix:///path:/callwire` when `socketPath` was given. */
  readonly unixUrl: string | undefined;
  readonly wtUrl: string | undefined;
  /** SHA-256 (hex) of the certificate WebTransport serves, for clients to pin. */
  readonly certHash: string | undefined;
  readonly certNotAfter: Date | undefined;
  readonly http3: boolean;
  readonly http3Reason: string;
  /** Whether the Docker operations are on, and why (not). */
  readonly docker: { readonly on: boolean; readonly reason: string };
  readonly registry: Registry;
  /** Origins allowed besides the server's own (spec §10.1). */
  readonly allowedOrigins: readonly string[];
  /** The open connections' calls, every transport's. */
  readonly connections: () => ReadonlySet<CallTable>;
  /** Resumable calls, on a connection or waiting for their caller (spec §4.9). */
  readonly resumable: ResumeRegistry;
  /** The fleet this server is a gateway of, when it is one. */
  readonly fleet: FleetGateway | undefined;
  /** The server's metrics, served at `GET /metrics` unless turned off; more may be added to `metrics.registry`. */
  readonly metrics: ServerMetrics;
  /** Stops accepting, lets live calls end within `graceMs`, then aborts the rest. */
  close(graceMs?: number): Promise<void>;
}

/** What the audit log may hold unwritten while the disk falls behind or fails (lines past it are counted as lost). */
const MAX_AUDIT_BUFFERED_BYTES = 16 * 1024 * 1024;

/** One rule for what loopback is, whether for the address we bind or the Host a browser sends (spec §10.1). */
export const isLoopback = isLoopbackName;

/** Starts WebSocket and WebTransport listeners over one registry. */
export async function startServer(options: ServerOptions = {}): Promise<RunningServer> {
  const host = options.host ?? '127.0.0.1';
  const tokens = options.tokens ?? [];
  if (!isLoopback(host) && tokens.length === 0) {
    throw new Error(
      `refusing to listen on ${host} without tokens: anyone who can reach it could run commands. ` +
        'Configure tokens (CALLWIRE_TOKENS or --tokens FILE), or listen on 127.0.0.1.',
    );
  }
  const originPolicy: OriginPolicy = {
    allowOrigins: options.allowOrigins ?? [],
    allowHosts: (options.allowHosts ?? []).map((h) => h.toLowerCase()),
    checkHost: isLoopback(host),
  };
  validatePolicy(originPolicy, tokens.length > 0);
  const logger = options.logger ?? silentLogger;
  const registry = new Registry();
  registry.register(...(options.operations ?? []));
  if (options.conformance) registry.register(...probeOperations());
  // Docker is opt-in: a library user's server exposes only the operations it was given.
  let docker = { on: false, reason: 'not asked for (pass docker: dockerEngine())' };
  const engine = options.docker === false ? undefined : options.docker;
  if (engine && !options.fleet) {
    const probe = await probeDocker(engine);
    docker = { on: probe.ok, reason: probe.reason };
    if (probe.ok) registry.register(...dockerOperations(engine));
  }
  const fleet = options.fleet ? await startGateway(options.fleet, options.limits?.maxFrameBytes ?? protocolLimits.maxFrameBytes, logger) : undefined;
  if (fleet) {
    registry.register(...fleet.operations);
    docker = { on: true, reason: `a fleet gateway over NATS (${fleet.hosts().filter((h) => h.state === 'up').length} hosts up)` };
  }
  // spec §10: with no tokens the server is loopback-only, and local callers have full access.
  const anonymousIdentity: Identity | null = tokens.length === 0 ? { subject: 'local', scopes: ['*'] } : null;
  // Opened before anything listens: a server asked to audit never serves a call unaudited.
  const auditPath = options.auditPath;
  const auditOut =
    auditPath === undefined
      ? undefined
      : auditPath === '-'
        ? AppendStream.stdout('the audit log', MAX_AUDIT_BUFFERED_BYTES, logger)
        : AuditFile.open(auditPath, MAX_AUDIT_BUFFERED_BYTES, logger);
  const audit = auditOut ? auditLog(auditOut) : undefined;
  const recorder = options.recordDir === undefined ? undefined : sessionRecorder(options.recordDir, logger, { ...defaultRecordingPolicy, ...options.recordPolicy });
  const metrics = createMetrics({ operations: registry, engine: docker.on ? engine : undefined });
  const observe = combineObservers([metrics.observe, ...(audit ? [audit.observe] : []), ...(recorder ? [recorder.observe] : [])], logger);
  const observeRefusals = combineRefusalObservers([metrics.observeRefusals, ...(audit ? [audit.observeRefusals] : [])], logger);
  const dispatcher = createDispatcher({
    registry,
    authenticate: tokenAuthenticator(tokens),
    anonymousIdentity,
    logger,
    ...(options.limits ? { limits: options.limits } : {}),
    ...(observe ? { observe } : {}),
    ...(observeRefusals ? { observeRefusals } : {}),
    ...(fleet ? { resumeSeam: fleet.resumeSeam } : {}),
    ...(options.sharedStreams === false ? { sharedStreams: false } : {}),
  });
  metrics.watchSessions(() => dispatcher.connections.size);
  if (fleet) metrics.watchFleet(() => ({ hostsUp: fleet.hosts().filter((h) => h.state === 'up').length, natsReconnects: fleet.nats.reconnects }));
  const keepaliveMs = options.keepaliveMs ?? protocolLimits.keepaliveMs;
  const maxConnections = options.maxConnections ?? protocolLimits.maxConnections;
  const handshakeTimeoutMs = options.handshakeTimeoutMs ?? protocolLimits.handshakeTimeoutMs;
  const guard = new ConnectionGuard({ maxConnections, handshakeTimeoutMs, logger });
  registry.register(
    ...discoveryOperations(registry),
    ...serviceOperations({
      callTables: () => dispatcher.connections,
      execKillFailures: () => engine?.counters.execKillFailures ?? 0,
      connections: () => guard.counts,
      resumable: () => ({ kept: dispatcher.resumable.size, detached: dispatcher.resumable.detached, replayBytes: dispatcher.resumable.budget.bytes }),
      limits: { ...dispatcher.limits, maxCallIdBytes: protocolLimits.maxCallIdBytes, keepaliveMs, maxConnections, handshakeTimeoutMs },
      ...(fleet ? { fleetHosts: (identity) => fleet.hosts(identity) } : {}),
    }),
  );
  const common = { dispatcher, originPolicy, keepaliveMs };

  const http: HttpServer = options.tls
    ? createHttpsServer({ cert: options.tls.certPem, key: options.tls.keyPem })
    : createHttpServer();
  guard.watch(http);
  const httpCalls = createHttpCalls(common);
  const lab = createLab(originPolicy);
  const metricsPage = options.metrics === false ? () => false : metricsEndpoint(metrics, { policy: originPolicy, authenticate: tokens.length > 0 ? dispatcher.authenticate : undefined });
  const onRequest = (req: IncomingMessage, res: ServerResponse): void => {
    guard.settled(req.socket);
    if (httpCalls(req, res) || metricsPage(req, res) || lab(req, res)) return;
    res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('callwire: the Lab at /, WebSocket at /callwire, calls over HTTP at POST /call/<operation>\n');
  };
  http.on('request', onRequest);
  // With this listener Node leaves 100 Continue to us: a refusal by the headers alone (413, 415) is sent before any body.
  http.on('checkContinue', onRequest);
  const ws = createWebSocketTransport(common, http);
  http.on('upgrade', (req: IncomingMessage) => guard.settled(req.socket));
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(options.port ?? 7070, host, () => resolve());
  });
  // Out of descriptors, accept fails on the listener: logged, and the server serves on.
  http.on('error', (error) => logger.error('the HTTP listener failed to accept', { error: error.message }));
  const wsPort = (http.address() as AddressInfo).port;
  let unix: UnixListener | undefined;
  if (options.socketPath !== undefined) {
    try {
      unix = await listenUnix(
        options.socketPath,
        onRequest,
        (req, socket, head) => {
          guard.settled(req.socket);
          return ws.handleUpgrade(req, socket, head);
        },
        guard,
        logger,
      );
    } catch (error) {
      await ws.close();
      await new Promise((resolve) => http.close(resolve));
      throw error;
    }
  }
  const urlHost = host.includes(':') ? `[${host}]` : host;

  let wt: WebTransportListener | undefined;
  let certHash: string | undefined;
  let certNotAfter: Date | undefined;
  let http3 = { on: false, reason: 'WebTransport is off' };
  let edge: H3Bridge | undefined;
  if (options.webTransportPort !== false) {
    const cert = options.tls
      ? { certPem: options.tls.certPem, keyPem: options.tls.keyPem, sha256: certificateSha256(options.tls.certPem), notAfter: undefined }
      : await selfSignedCertificate([host, 'localhost', '127.0.0.1']);
    certHash = cert.sha256;
    certNotAfter = cert.notAfter;
    try {
      wt = await listenWebTransport({ ...common, host, port: options.webTransportPort ?? 7071, certPem: cert.certPem, keyPem: cert.keyPem, guard, http3: options.http3 !== false });
    } catch (error) {
      await Promise.all([ws.close(), unix?.close()]);
      await new Promise((resolve) => http.close(resolve));
      throw error;
    }
    http3 = { on: wt.http3, reason: wt.http3 ? 'the native fails-components transport' : wt.http3Reason };
    if (options.http3 === false) http3 = { on: false, reason: 'turned off (--no-http3)' };
    // The fails-components provider wins when its native part loaded; otherwise the Deno edge, when installed.
    else if (!wt.http3) {
      const deno = await findDeno();
      if ('reason' in deno) http3 = { on: false, reason: `${wt.http3Reason}, and ${deno.reason}` };
      else {
        try {
          edge = await startH3Bridge({
            dispatcher,
            host,
            port: wt.port,
            certPem: cert.certPem,
            keyPem: cert.keyPem,
            keepaliveMs,
            guard,
            // Over HTTP/3 the Origin is not visible: without tokens, only the fresh certificate's hash admits a caller (docs/http3.md "Server").
            anonymousIdentity: options.tls ? null : anonymousIdentity,
          });
          http3 = { on: true, reason: 'the Deno edge (edge/h3-server-edge.ts)' };
        } catch (error) {
          http3 = { on: false, reason: `the Deno edge did not start: ${error instanceof Error ? error.message : String(error)}` };
        }
      }
    }
  }

  return {
    wsUrl: `${options.tls ? 'wss' : 'ws'}://${urlHost}:${wsPort}/callwire`,
    unixUrl: unix?.url,
    wtUrl: wt ? `https://${urlHost}:${wt.port}/callwire` : undefined,
    certHash,
    certNotAfter,
    http3: http3.on,
    http3Reason: http3.reason,
    docker,
    registry,
    allowedOrigins: originPolicy.allowOrigins,
    connections: () => dispatcher.connections,
    resumable: dispatcher.resumable,
    fleet,
    metrics,
    async close(graceMs = 0) {
      await dispatcher.shutdown(graceMs);
      await fleet?.close();
      await Promise.all([ws.close(), wt?.close(), edge?.close(), unix?.close()]);
      http.closeAllConnections?.();
      await new Promise((resolve) => http.close(resolve));
      await Promise.all([auditOut?.close(), recorder?.close()]);
    },
  };
}
