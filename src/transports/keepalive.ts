import type { Http2Session } from 'node:http2';
import type { WebSocket } from 'ws';

/**
 * WebSocket keepalive (spec/PROTOCOL.md §5.5): one timer for all of a transport's
 * sockets, a ping to each every `intervalMs`. A socket from which nothing arrived
 * (no pong, no message) during a whole interval after a ping has vanished without
 * a close (cable pulled, laptop asleep, process frozen): it is terminated, which
 * aborts its calls (ABT-4). 0 turns it off.
 */
export class Keepalive {
  private readonly heard = new Map<WebSocket, boolean>();
  private timer: ReturnType<typeof setInterval> | undefined;

  constructor(
    private readonly intervalMs: number,
    private readonly onDead: () => void,
  ) {}

  // One listener for every socket: `ws` emits with the socket as `this`.
  private readonly onPong = (keepalive: Keepalive): ((this: WebSocket) => void) =>
    function (this: WebSocket) {
      keepalive.hear(this);
    };
  private readonly pong = this.onPong(this);

  track(ws: WebSocket): void {
    if (this.intervalMs <= 0) return;
    this.heard.set(ws, true);
    ws.on('pong', this.pong);
    this.timer ??= setInterval(() => this.round(), this.intervalMs).unref();
  }

  /** Anything from the peer counts: a frame as much as a pong. */
  hear(ws: WebSocket): void {
    if (this.heard.has(ws)) this.heard.set(ws, true);
  }

  untrack(ws: WebSocket): void {
    this.heard.delete(ws);
    if (this.heard.size === 0 && this.timer !== undefined) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  private round(): void {
    for (const [ws, heard] of this.heard) {
      if (!heard) {
        this.onDead();
        this.untrack(ws);
        ws.terminate();
        continue;
      }
      this.heard.set(ws, false);
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
