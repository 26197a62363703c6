import { writeBatcher, type Corkable } from '../io/index.js';
import type { SocketConstructor, SocketLike, WebSocketPlatform } from '../client/index.js';

/**
 * Node's WebSocket: the `ws` package, which sends the token as a header and trusts a
 * given CA; frames sent in one turn of the event loop leave in one write; and with
 * `keepaliveMs`, a ping that drops a connection silent for a whole interval (§5.5), so a
 * reconnecting client notices in seconds, not when TCP gives up.
 */
export async function nodeWebSocket(keepaliveMs = 0): Promise<WebSocketPlatform> {
  const ws = await import('ws');
  return {
    Socket: ws.WebSocket as unknown as SocketConstructor,
    headers: true,
    // ws hands a message that fits one socket read as a view of it; 'arraybuffer' would copy it once more.
    binaryType: 'nodebuffer',
    writer(socket) {
      // `_socket` is the ws package's TCP socket.
      const tcp = (socket as unknown as { _socket?: Corkable })._socket;
      return tcp ? writeBatcher(tcp) : undefined;
    },
    watch: (socket) => keepalive(socket, keepaliveMs),
  };
}

/** Pings `socket` every `intervalMs`; terminates it (a close without a frame, 1006) when nothing arrived since the last ping. */
function keepalive(socket: SocketLike, intervalMs: number): () => void {
  const { ping, terminate, on } = socket;
  if (intervalMs <= 0 || !ping || !terminate || !on) return () => undefined;
  let heard = true;
  on.call(socket, 'pong', () => (heard = true));
  socket.addEventListener('message', () => (heard = true));
  const timer = setInterval(() => {
    if (!heard) return terminate.call(socket);
    heard = false;
    ping.call(socket);
  }, intervalMs);
  (timer as { unref?: () => void }).unref?.();
  return () => clearInterval(timer);
}

