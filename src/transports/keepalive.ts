import type { Http2Session } from 'node:http2';
import type { Socket } from 'node:net';
import type { WebSocket } from 'ws';

/**
 * The slowest reading speed at which a peer with output queued ahead of its ping is still
 * waited for: on loopback the kernel's buffers alone hold tens of megabytes, which a
 * loaded client reads for seconds before it reaches the ping.
 */
const SLOWEST_READER_BYTES_PER_SECOND = 1024 * 1024;
/**
 * A WebSocket with output flowing gets a ping after every this many bytes too, so a live
 * reader answers one at least every quarter second at the slowest speed waited for, and
 * a peer gone mid-stream owes a ping with little output before it.
 */
const PING_EVERY_BYTES = 256 * 1024;
/** Unanswered pings kept track of on a WebSocket; a peer that owes more is not sent another. */
const MAX_UNANSWERED_PINGS = 256;
/** Node's own bound on unanswered HTTP/2 PINGs (maxOutstandingPings), past which `ping` throws. */
const MAX_UNANSWERED_HTTP2_PINGS = 10;

/**
 * The pings a peer owes an answer, oldest first, each with the stream's byte count when it
 * was sent: the peer reaches a ping only after reading every byte before it. A ping is
 * due one interval after it was sent, plus the time the output between the last answered
 * ping and it takes to read at SLOWEST_READER_BYTES_PER_SECOND.
 */
class UnansweredPings {
  private readonly pings: { readonly at: number; readonly position: number }[] = [];

  /** `answeredAt`: the stream's byte count now, which the peer is taken to have read. */
  constructor(
    private readonly intervalMs: number,
    private answeredAt: number,
    private readonly max: number,
  ) {}

  get full(): boolean {
    return this.pings.length >= this.max;
  }

  sent(position: number): void {
    this.pings.push({ at: performance.now(), position });
  }

  /** A peer answers pings in the order they reached it. */
  answered(): void {
    const ping = this.pings.shift();
    if (ping) this.answeredAt = ping.position;
  }

  /** Checked each interval: a tenth of one is left for the timer's own lateness or earliness. */
  overdue(): boolean {
    const oldest = this.pings[0];
    if (!oldest) return false;
    const readMs = ((oldest.position - this.answeredAt) * 1000) / SLOWEST_READER_BYTES_PER_SECOND;
    return performance.now() - oldest.at >= this.intervalMs * 0.9 + readMs;
  }
}

/** One WebSocket the keepalive watches. */
interface Watched {
  readonly socket: Socket;
  /** Bytes read from the peer at the last round. */
  read: number;
  /** Bytes sent since the last ping. */
  sinceLastPing: number;
  readonly pings: UnansweredPings;
  readonly onPong: () => void;
}

/**
 * WebSocket keepalive (spec/PROTOCOL.md §5.5): one timer for all of a transport's
 * sockets, a ping to each every `intervalMs`, and one after every PING_EVERY_BYTES of
 * output (`sent`). A peer from which nothing arrived (no pong, no message) during a
 * whole interval, and whose oldest unanswered ping is overdue (UnansweredPings), has
 * vanished without a close (cable pulled, laptop asleep, process frozen): it is
 * terminated, which aborts its calls (ABT-4). A live reader of a large stream reaches
 * its pings only after the bytes before them, and is waited for. 0 turns it off.
 */
export class Keepalive {
  private readonly watched = new Map<WebSocket, Watched>();
  private timer: ReturnType<typeof setInterval> | undefined;

  constructor(
    private readonly intervalMs: number,
    private readonly onDead: () => void,
  ) {}

  track(ws: WebSocket, socket: Socket): void {
    if (this.intervalMs <= 0) return;
    const pings = new UnansweredPings(this.intervalMs, sentBytes(socket), MAX_UNANSWERED_PINGS);
    const watched: Watched = { socket, read: -1, sinceLastPing: 0, pings, onPong: () => pings.answered() };
    ws.on('pong', watched.onPong);
    this.watched.set(ws, watched);
    this.timer ??= setInterval(() => this.round(), this.intervalMs).unref();
  }

  untrack(ws: WebSocket): void {
    const watched = this.watched.get(ws);
    if (watched) ws.off('pong', watched.onPong);
    this.watched.delete(ws);
    if (this.watched.size === 0 && this.timer !== undefined) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  /** `bytes` of output were just handed to `ws`. */
  sent(ws: WebSocket, bytes: number): void {
    const seen = this.watched.get(ws);
    if (!seen) return;
    seen.sinceLastPing += bytes;
    if (seen.sinceLastPing >= PING_EVERY_BYTES) this.ping(ws, seen);
  }

  private round(): void {
    for (const [ws, seen] of this.watched) {
      const read = seen.socket.bytesRead;
      const silent = read === seen.read;
      seen.read = read;
      if (silent && seen.pings.overdue()) {
        this.onDead();
        this.untrack(ws);
        ws.terminate();
        continue;
      }
      this.ping(ws, seen);
    }
  }

  private ping(ws: WebSocket, seen: Watched): void {
    seen.sinceLastPing = 0;
    if (seen.pings.full) return;
    seen.pings.sent(sentBytes(seen.socket));
    ws.ping();
  }
}

/** Every byte this side has sent or queued on the socket, so far. */
function sentBytes(socket: Socket): number {
  return socket.bytesWritten ?? 0;
}

/**
 * The same rule for WebTransport over HTTP/2: an HTTP/2 PING every `intervalMs`; once
 * the oldest unanswered PING is overdue (UnansweredPings), the peer is gone, and the
 * whole HTTP/2 connection (every WebTransport session on it) is destroyed (§5.5).
 */
export function startHttp2Keepalive(session: Http2Session, intervalMs: number, onDead: () => void): void {
  if (intervalMs <= 0) return;
  const socket = session.socket;
  const pings = new UnansweredPings(intervalMs, sentBytes(socket), MAX_UNANSWERED_HTTP2_PINGS);
  const timer = setInterval(() => {
    if (session.destroyed || session.closed) return clearInterval(timer);
    if (pings.overdue()) {
      clearInterval(timer);
      onDead();
      session.destroy();
      return;
    }
    if (pings.full) return;
    pings.sent(sentBytes(socket));
    session.ping((error) => {
      if (!error) pings.answered();
    });
  }, intervalMs);
  timer.unref();
  session.once('close', () => clearInterval(timer));
}
