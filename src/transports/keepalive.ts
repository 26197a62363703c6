import type { Http2Session } from 'node:http2';
import type { Socket } from 'node:net';
import type { WebSocket } from 'ws';

/**
 * WebSocket keepalive (spec/PROTOCOL.md §5.5): one timer for all of a transport's
 * sockets, a ping to each every `intervalMs`. A socket on which no byte arrived (no
 * pong, no message) during a whole interval after a ping has vanished without a
 * close (cable pulled, laptop asleep, process frozen): it is terminated, which
 * aborts its calls (ABT-4). 0 turns it off. Liveness is read from the socket's
 * byte count, so no listener per connection is needed.
 */
export class Keepalive {
  private readonly read = new Map<WebSocket, { readonly socket: Socket; bytes: number }>();
  private timer: ReturnType<typeof setInterval> | undefined;

  constructor(
    private readonly intervalMs: number,
    private readonly onDead: () => void,
  ) {}

  track(ws: WebSocket, socket: Socket): void {
    if (this.intervalMs <= 0) return;
    this.read.set(ws, { socket, bytes: -1 });
    this.timer ??= setInterval(() => this.round(), this.intervalMs).unref();
  }

  untrack(ws: WebSocket): void {
    this.read.delete(ws);
    if (this.read.size === 0 && this.timer !== undefined) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  private round(): void {
    for (const [ws, seen] of this.read) {
      if (seen.socket.bytesRead === seen.bytes) {
        this.onDead();
        this.untrack(ws);
        ws.terminate();
        continue;
      }
      seen.bytes = seen.socket.bytesRead;
      ws.ping();
    }
  }
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
