import { connectWebSocket, connectWebTransport, connectWith, type Client, type ConnectOptions, type Dialers } from '../client/index.js';
import { openWebTransport } from '../webtransport/index.js';
import { nodeWebSocket } from './websocket.js';

/**
 * Node's transports: WebSocket through the `ws` package, WebTransport over HTTP/2
 * through the library and over HTTP/3 through the Deno client edge.
 */
export const nodeDialers: Dialers = {
  webSocket: async (url, { keepaliveMs, ...options }) => connectWebSocket(url, options, await nodeWebSocket(keepaliveMs)),
  webTransport: (url, options) => connectWebTransport(url, options, openWebTransport),
};

/**
 * Connects to a callwire server from Node. The URL picks the transport: `ws:`/`wss:` →
 * WebSocket, `ws+unix:` → WebSocket on the server's unix socket, `https:` →
 * WebTransport (spec/PROTOCOL.md §5).
 */
export function connect(url: string, options: ConnectOptions = {}): Promise<Client> {
  return connectWith(nodeDialers, url, options);
}
