import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Registry } from '../../dispatcher/index.js';
import type { FleetGateway } from '../../fleet/index.js';
import type { DockerEngine } from '../../operations/index.js';
import { metricsEndpoint } from '../metrics-endpoint.js';
import { createMetrics, type ServerMetrics } from '../metrics.js';
import type { Access } from './access.js';
import { hostsUp } from './fleet-gateway.js';

export interface MetricsPageOptions {
  /** Serve `GET /metrics` on the HTTP port (docs/cli.md "Metrics"); with tokens it needs the scope `metrics:read`. Default true. */
  readonly metrics?: boolean;
}

/** A request handler of the HTTP port: false when the request is not its own. */
export type PageHandler = (req: IncomingMessage, res: ServerResponse) => boolean;

/**
 * The server's metrics, counted whether or not they are served (code may read
 * `server.metrics`), and the `/metrics` page when asked for. prom-client is loaded by
 * `createMetrics`, not by importing the library.
 */
export function startMetrics(
  options: MetricsPageOptions,
  sources: { readonly operations: Registry; readonly engine: DockerEngine | undefined; readonly fleet: FleetGateway | undefined },
  access: Access,
): { metrics: ServerMetrics; page: PageHandler } {
  const metrics = createMetrics({ operations: sources.operations, engine: sources.engine });
  const fleet = sources.fleet;
  if (fleet) metrics.watchFleet(() => ({ hostsUp: hostsUp(fleet), natsReconnects: fleet.nats.reconnects }));
  const page = options.metrics === false ? () => false : metricsEndpoint(metrics, { policy: access.originPolicy, authenticate: access.hasTokens ? access.authenticate : undefined });
  return { metrics, page };
}
