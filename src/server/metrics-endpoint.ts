import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { holdsScope, silentLogger, type Logger } from '../dispatcher/index.js';
import { isLoopbackName } from '../protocol/index.js';
import { bearerToken, checkBrowserRequest, requestPath, type Authenticate, type OriginPolicy } from '../transports/index.js';
import type { MetricsSource } from './metrics.js';

export const METRICS_PATH = '/metrics';
/** The scope a token needs to read the metrics of a server that has tokens. */
export const METRICS_SCOPE = 'metrics:read';

export interface MetricsAccess {
  /** The browser rules of the port it is served on (spec §10.1): the Host check stops a DNS-rebinding page. */
  readonly policy: OriginPolicy;
  /** A server with tokens: a scrape needs `Authorization: Bearer` with the scope `metrics:read`. None: anyone who reaches the port. */
  readonly authenticate?: Authenticate | undefined;
}

const TEXT = { 'content-type': 'text/plain; charset=utf-8' };

/**
 * `GET /metrics` (docs/cli.md "Metrics"): returns false for other paths. Nothing in it
 * lets a page of another origin read it (no CORS headers, a foreign Origin refused);
 * a caller without the scope is refused before anything is collected, and scrapes
 * that overlap share one collection.
 */
export function metricsEndpoint(source: MetricsSource, access: MetricsAccess): (req: IncomingMessage, res: ServerResponse) => boolean {
  let pending: Promise<string> | undefined;
  const scrape = (): Promise<string> =>
    (pending ??= source.metrics().finally(() => {
      pending = undefined;
    }));
  return (req, res) => {
    if (requestPath(req.url) !== METRICS_PATH) return false;
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { ...TEXT, allow: 'GET, HEAD' }).end(`use GET ${METRICS_PATH}\n`);
      return true;
    }
    const verdict = checkBrowserRequest(access.policy, req.headers.origin, req.headers.host);
    if (!verdict.ok) {
      res.writeHead(verdict.status, TEXT).end(`${verdict.reason}\n`);
      return true;
    }
    if (access.authenticate) {
      const token = bearerToken(req.headers.authorization);
      const identity = token === undefined ? undefined : access.authenticate(token);
      // The token itself is never echoed.
      if (identity === undefined) {
        res.writeHead(401, { ...TEXT, 'www-authenticate': 'Bearer realm="callwire"' }).end(`${METRICS_PATH} needs a token with the scope ${METRICS_SCOPE} (Authorization: Bearer)\n`);
        return true;
      }
      if (!holdsScope(identity, METRICS_SCOPE)) {
        res.writeHead(403, { ...TEXT, 'www-authenticate': `Bearer realm="callwire", error="insufficient_scope", scope="${METRICS_SCOPE}"` }).end(`missing scope: ${METRICS_SCOPE}\n`);
        return true;
      }
    }
    scrape().then(
      (body) => {
        res.writeHead(200, { 'content-type': source.contentType, 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' });
        res.end(req.method === 'HEAD' ? undefined : body);
      },
      (error: unknown) => {
        res.writeHead(500, TEXT).end(`the metrics could not be collected: ${error instanceof Error ? error.message : String(error)}\n`);
      },
    );
    return true;
  };
}

export interface MetricsListener {
  /** `http://HOST:PORT/metrics`. */
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

/** Connections a metrics-only listener keeps open at once: a scraper needs one. */
const MAX_METRICS_CONNECTIONS = 64;
/** How long a request to it may take to arrive. */
const METRICS_REQUEST_TIMEOUT_MS = 10_000;

/**
 * `GET /metrics` on a port of its own, for a process that serves no HTTP (the fleet's
 * agent, `callwire agent --metrics HOST:PORT`). On loopback, a Host that is not a
 * loopback name is refused (DNS rebinding, spec §10.1).
 */
export async function serveMetrics(
  source: MetricsSource,
  host: string,
  port: number,
  options: { readonly logger?: Logger; readonly authenticate?: Authenticate } = {},
): Promise<MetricsListener> {
  const logger = options.logger ?? silentLogger;
  const endpoint = metricsEndpoint(source, { policy: { allowOrigins: [], allowHosts: [], checkHost: isLoopbackName(host) }, authenticate: options.authenticate });
  const server: Server = createServer({ requestTimeout: METRICS_REQUEST_TIMEOUT_MS }, (req, res) => {
    if (!endpoint(req, res)) res.writeHead(404, TEXT).end(`callwire: metrics at GET ${METRICS_PATH}\n`);
  });
  server.maxConnections = MAX_METRICS_CONNECTIONS;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  // Out of descriptors, accept fails on the listener: logged, and the process goes on.
  server.on('error', (error) => logger.error('the metrics listener failed to accept', { error: error.message }));
  const bound = (server.address() as AddressInfo).port;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${bound}${METRICS_PATH}`,
    port: bound,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
