/** callwire (server): start a server, define operations, test without sockets. */
export { startServer, isLoopback, type ServerOptions, type RunningServer } from './server.js';
export { loadTokens, tokenAuthenticator, type TokenEntry } from './tokens.js';
export { createMetrics, UNKNOWN_OPERATION, type FleetFigures, type MetricsOptions, type MetricsSource, type ServerMetrics } from './metrics.js';
export { metricsEndpoint, serveMetrics, METRICS_PATH, METRICS_SCOPE, type MetricsAccess, type MetricsListener } from './metrics-endpoint.js';
export { combineObservers, combineRefusalObservers } from './call-observers.js';
export { selfSignedCertificate, certificateSha256, type Certificate } from './certificate.js';
export {
  bytesSchema,
  createDispatcher,
  defineOperation,
  deriveContext,
  Registry,
  FrameConnection,
  type Dispatcher,
  type DispatcherOptions,
  type FrameTransport,
  type StreamSink,
  type StreamEntry,
  type Operation,
  type CallContext,
  type Identity,
  type Logger,
} from '../dispatcher/index.js';
export { RpcError } from '../protocol/index.js';
export { discoveryOperations, dockerEngine, dockerOperations, serviceOperations, type DockerEngine } from '../operations/index.js';
export { createWebSocketTransport, listenWebTransport, type WebSocketTransport, type WebTransportListener, type OriginPolicy } from '../transports/index.js';
