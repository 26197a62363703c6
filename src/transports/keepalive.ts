import type { Http2Session } from 'node:http2';
import type { WebSocket } from 'ws';

/**
 * WebSocket keepalive (spec/PROTOCOL.md §5.5): a ping every `intervalMs`; a peer
 * from which nothing arrived (no pong, no message) during a whole interval after a
 * ping has vanished without a close (cable pulled, laptop asleep, process frozen),
 * and its socket is terminated, which aborts its calls (ABT-4). 0 turns it off.
 */
export function startKeepalive(ws: WebSocket, intervalMs: number, onDead: () => void): { stop(): void } {
  if (intervalMs <= 0) return { stop() {} };
  let heard = true;
  const hear = (): void => {
    heard = true;
  };
  ws.on('pong', hear);
  ws.on('message', hear);
  const timer = setInterval(() => {
    if (!heard) {
      onDead();
      ws.terminate();
      return;
    }
    heard = false;
    ws.ping();
  }, intervalMs);
  timer.unref();
  return {
    stop() {
      clearInterval(timer);
      ws.off('pong', hear);
      ws.off('message', hear);
    },
  };
}

/**
 * The same rule for WebTransport over HTTP/2: an HTTP/2 PING every `intervalMs`;
 * a PING still unanswered an interval later means the peer is gone, and the whole
 * HTTP/2 connection (every WebTransport session on it) is destroyed (§5.5).
 */
export function startHttp2Keepalive(session: Http2Session, intervalMs: number, onDead: () => void): void {
  if (intervalMs <= 0) return;
  let waiting = false;
  const timer = setInterval(() => {
    if (session.destroyed || session.closed) return clearInterval(timer);
    if (waiting) {
      clearInterval(timer);
      onDead();
      session.destroy();
      return;
    }
    waiting = true;
    session.ping((error) => {
      if (!error) waiting = false;
    });
  }, intervalMs);
  timer.unref();
  session.once('close', () => clearInterval(timer));
}
