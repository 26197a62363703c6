import { silentLogger, type CallTable, type Registry, type ResumeRegistry } from '../dispatcher/index.js';
import type { FleetGateway } from '../fleet/index.js';
import { isLoopbackName, limits as protocolLimits } from '../protocol/index.js';
import type { ServerMetrics } from './metrics.js';
import { serverAccess } from './parts/access.js';
import { startAudit } from './parts/audit.js';
import { givenOperations, startDispatcher } from './parts/calls.js';
import { connectionRules } from './parts/connections.js';
import { startDockerEngine, type DockerStatus } from './parts/docker-engine.js';
import { startFleetGateway } from './parts/fleet-gateway.js';
import { startHttpListeners } from './parts/http-listeners.js';
import { startMetrics } from './parts/metrics.js';
import { startRecordings } from './parts/recordings.js';
import { startWebTransport } from './parts/webtransport.js';
import type { ServerOptions } from './server-options.js';
import { Teardown } from './teardown.js';
import { combineObservers, combineRefusalObservers } from './call-observers.js';

export type { ServerOptions } from './server-options.js';

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
  readonly docker: DockerStatus;
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
  /**
   * Stops accepting, lets live calls end within `graceMs`, then aborts the rest and closes
   * every part, each connection with 1001 `server shutting down` (§4.9). Called again while
   * closing, the live calls end now.
   */
  close(graceMs?: number): Promise<void>;
}

/** One rule for what loopback is, whether for the address we bind or the Host a browser sends (spec §10.1). */
export const isLoopback = isLoopbackName;

/**
 * Starts a server from its parts (src/server/parts), in the order a caller may first
 * reach them: the access rules, then what observes calls, what offers operations, the
 * dispatcher, and last the listeners. Each part registers its undoing on one
 * `Teardown` as it starts, so a part that fails undoes those started before it, and
 * `close()` runs that same path.
 */
export async function startServer(options: ServerOptions = {}): Promise<RunningServer> {
  const access = serverAccess(options);
  const logger = options.logger ?? silentLogger;
  const teardown = new Teardown(logger);
  let graceMs = 0;
  let closing = false;
  return teardown.attempt(async () => {
    const audit = startAudit(options, logger, teardown);
    const recordings = startRecordings(options, logger, teardown);
    const registry = givenOperations(options);
    const maxFrameBytes = options.limits?.maxFrameBytes ?? protocolLimits.maxFrameBytes;
    const backend = options.fleet
      ? await startFleetGateway(options.fleet, maxFrameBytes, registry, logger, teardown)
      : { ...(await startDockerEngine(options, registry)), fleet: undefined };
    const engine = 'engine' in backend ? backend.engine : undefined;
    const { metrics, page: metricsPage } = startMetrics(options, { operations: registry, engine, fleet: backend.fleet }, access);
    const connections = connectionRules(options, logger);
    const dispatcher = startDispatcher(options, {
      registry,
      access,
      connections,
      observe: combineObservers([metrics.observe, ...(audit ? [audit.observe] : []), ...(recordings ? [recordings] : [])], logger),
      observeRefusals: combineRefusalObservers([metrics.observeRefusals, ...(audit ? [audit.observeRefusals] : [])], logger),
      observeResumes: audit?.observeResumes,
      engine,
      fleet: backend.fleet,
      logger,
    });
    metrics.watchSessions(() => dispatcher.connections.size);
    const http = await startHttpListeners(options, { access, dispatcher, connections, metricsPage, logger }, teardown);
    const webTransport = await startWebTransport(options, { access, dispatcher, connections }, teardown);
    // Undone first: calls end (within the grace) before the listeners close their connections.
    teardown.defer(() => dispatcher.shutdown(graceMs));
    return {
      ...http,
      wtUrl: webTransport.wtUrl,
      certHash: webTransport.certHash,
      certNotAfter: webTransport.certNotAfter,
      http3: webTransport.http3.on,
      http3Reason: webTransport.http3.reason,
      docker: backend.status,
      registry,
      allowedOrigins: access.originPolicy.allowOrigins,
      connections: () => dispatcher.connections,
      resumable: dispatcher.resumable,
      fleet: backend.fleet,
      metrics,
      close(grace = 0) {
        // Closing already (a second Ctrl-C): the live calls' grace ends now.
        if (closing) void dispatcher.shutdown(0);
        closing = true;
        graceMs = grace;
        return teardown.dispose();
      },
    };
  });
}
