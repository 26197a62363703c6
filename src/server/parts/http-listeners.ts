import { createServer as createHttpServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Dispatcher, Logger } from '../../dispatcher/index.js';
import { createHttpCalls, createWebSocketTransport } from '../../transports/index.js';
import { createLab } from '../lab.js';
import type { Teardown } from '../teardown.js';
import { listenUnix } from '../unix-listener.js';
import type { Access } from './access.js';
import type { Connections } from './connections.js';
import type { PageHandler } from './metrics.js';

/** PEM certificate and key: wss:// and WebTransport serve them. */
export interface TlsOptions {
  readonly certPem: string;
  readonly keyPem: string;
}

export interface HttpListenOptions {
  /** WebSocket port; 0 picks a free one. Default 7070. */
  readonly port?: number;
  /** PEM certificate and key; without them WebSocket is plain and WebTransport uses a fresh self-signed certificate. */
  readonly tls?: TlsOptions;
  /** Also serve the WebSocket and HTTP calls on this unix socket (mode 0600), for callers on this machine. */
  readonly socketPath?: string;
}

export interface HttpListeners {
  readonly wsUrl: string;
  /** `ws+unix:///path:/callwire` when `socketPath` was given. */
  readonly unixUrl: string | undefined;
}

/**
 * The HTTP port (WebSocket at /callwire, calls over HTTP, /metrics, the Lab) and, when
 * asked for, the same on a unix socket. Each registers its close as it starts.
 */
export async function startHttpListeners(
  options: HttpListenOptions,
  parts: { readonly access: Access; readonly dispatcher: Dispatcher; readonly connections: Connections; readonly metricsPage: PageHandler; readonly logger: Logger },
  teardown: Teardown,
): Promise<HttpListeners> {
  const { access, dispatcher, connections, logger } = parts;
  const { guard } = connections;
  const common = { dispatcher, originPolicy: access.originPolicy, keepaliveMs: connections.keepaliveMs };
  const http: HttpServer = options.tls ? createHttpsServer({ cert: options.tls.certPem, key: options.tls.keyPem }) : createHttpServer();
  guard.watch(http);
  const httpCalls = createHttpCalls(common);
  const lab = createLab(access.originPolicy);
  const onRequest = (req: IncomingMessage, res: ServerResponse): void => {
    guard.settled(req.socket);
    if (httpCalls(req, res) || parts.metricsPage(req, res) || lab(req, res)) return;
    res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('callwire: the Lab at /, WebSocket at /callwire, calls over HTTP at POST /call/<operation>\n');
  };
  http.on('request', onRequest);
  // With this listener Node leaves 100 Continue to us: a refusal by the headers alone (413, 415) is sent before any body.
  http.on('checkContinue', onRequest);
  const ws = createWebSocketTransport(common, http);
  http.on('upgrade', (req: IncomingMessage) => guard.settled(req.socket));
  teardown.defer(async () => {
    await ws.close();
    http.closeAllConnections();
    await new Promise((resolve) => http.close(resolve));
  });
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(options.port ?? 7070, access.host, () => resolve());
  });
  // Out of descriptors, accept fails on the listener: logged, and the server serves on.
  http.on('error', (error) => logger.error('the HTTP listener failed to accept', { error: error.message }));
  const unix =
    options.socketPath === undefined
      ? undefined
      : teardown.use(
          await listenUnix(
            options.socketPath,
            onRequest,
            (req, socket, head) => {
              guard.settled(req.socket);
              return ws.handleUpgrade(req, socket, head);
            },
            guard,
            logger,
          ),
        );
  return { wsUrl: `${options.tls ? 'wss' : 'ws'}://${urlHost(access.host)}:${(http.address() as AddressInfo).port}/callwire`, unixUrl: unix?.url };
}

/** A host as a URL writes it: an IPv6 address in brackets. */
export const urlHost = (host: string): string => (host.includes(':') ? `[${host}]` : host);
