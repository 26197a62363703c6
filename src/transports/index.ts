/** Transports: thin adapters from a connection to a dispatcher FrameConnection. */
export { createWebSocketTransport, type WebSocketTransport, type WebSocketTransportOptions } from './websocket.js';
export { ConnectionGuard, type ConnectionCounts, type ConnectionGuardOptions } from './connection-guard.js';
export { bearerToken, type Authenticate } from './auth.js';
export { listenWebTransport, probeHttp3, type WebTransportListener, type WebTransportServerOptions } from './webtransport.js';
export { checkBrowserRequest, validatePolicy, type OriginPolicy, type Verdict } from './origin.js';
export { requestPath } from './request-path.js';
export { createHttpCalls, CALL_PATH, DEADLINE_HEADER, type HttpCallsOptions } from './http/calls.js';
export { EXIT_CODE_HEADER, CALL_ID_HEADER } from './http/responder.js';
// The server decides between HTTP/3 providers; finding Deno is the WebTransport layer's.
export { findDeno } from '../webtransport/index.js';
export { startH3Bridge, type H3Bridge, type H3BridgeOptions } from './h3-bridge.js';
