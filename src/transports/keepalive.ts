import type { Http2Session } from 'node:http2';
import type { Socket } from 'node:net';
import type { WebSocket } from 'ws';

/**
 * WebSocket keepalive (spec/PROTOCOL.md §5.5): one timer for all of a transport's
 * sockets, a ping to each every `intervalMs`. A socket that, during a whole interval
 * after a ping, neither gave a byte (no pong, no message) nor took one of ours (the
 * kernel accepted none of what we wrote, as the peer's TCP acknowledged none) has
 * vanished without a close (cable pulled, laptop asleep, process frozen): it is
 * terminated, which aborts its calls (ABT-4). 0 turns it off.
 *
 * Why taken bytes count: a ping waits behind everything written before it, and on
 * loopback the kernels' buffers alone hold tens of megabytes, so a live peer reading a
 * large stream slowly may reach the ping many intervals later. While it reads, the
 * kernel takes our output; a vanished peer stops acknowledging and the kernel stops
 * taking it once its send buffer is full. Both counts are the socket's own, so no
 * listener per connection is needed.
 */
/** A server's ping without payload: two header bytes, unmasked (RFC 6455 §5.2). */
const EMPTY_PING_BYTES = 2;

export class Keepalive {
  private readonly seen = new Map<WebSocket, { readonly socket: Socket; progress: number }>();
  private timer: ReturnType<typeof setInterval> | undefined;

  constructor(
    private readonly intervalMs: number,
    private readonly onDead: () => void,
  ) {}

  track(ws: WebSocket, socket: Socket): void {
    if (this.intervalMs <= 0) return;
    this.seen.set(ws, { socket, progress: -1 });
    this.timer ??= setInterval(() => this.round(), this.intervalMs).unref();
  }

  untrack(ws: WebSocket): void {
    this.seen.delete(ws);
    if (this.seen.size === 0 && this.timer !== undefined) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  private round(): void {
    for (const [ws, seen] of this.seen) {
      const progress = exchangedBytes(seen.socket);
      if (progress <= seen.progress) {
        this.onDead();
        this.untrack(ws);
        ws.terminate();
        continue;
      }
      // The ping's own bytes, which even a vanished peer's kernel may still take, are no sign of life.
      const before = seen.socket.bytesWritten ?? 0;
      ws.ping();
      seen.progress = progress + ((seen.socket.bytesWritten ?? 0) - before || EMPTY_PING_BYTES);
    }
  }
}

/**
 * Bytes read from the socket plus bytes of ours the kernel has taken: `bytesWritten`
 * counts what was handed to the socket, `writableLength` what of it is still waiting
 * in the process (not yet written, or written only in part); the difference grows only
 * as the kernel accepts bytes.
 */
export function exchangedBytes(socket: Socket): number {
  return socket.bytesRead + (socket.bytesWritten ?? 0) - socket.writableLength;
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
