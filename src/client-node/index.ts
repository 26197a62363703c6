/**
 * callwire/client for Node: the platform-free client (src/client, what browsers load)
 * with Node's transports: `connect` here dials through the `ws` package, WebTransport
 * over HTTP/2 and HTTP/3 through Deno, and takes Node-only options (a CA, headers, keepalive).
 */
export * from '../client/index.js';
export { connect, nodeDialers } from './connect.js';
