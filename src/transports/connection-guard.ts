import type { Server as NetServer, Socket } from 'node:net';
import type { Logger } from '../dispatcher/index.js';

export interface ConnectionGuardOptions {
  /** Open connections on every guarded listener together; more are closed unread (spec §9, maxConnections). */
  readonly maxConnections: number;
  /** How long a connection may take to complete its first request, upgrade or session request (LIM-4); 0: no bound. */
  readonly handshakeTimeoutMs: number;
  readonly logger?: Logger | undefined;
}

export interface ConnectionCounts {
  /** Connections open now on every guarded listener. */
  readonly open: number;
  /** Connections closed unread because `maxConnections` were open. */
  readonly refused: number;
  /** Connections closed because they completed nothing within `handshakeTimeoutMs`. */
  readonly timedOut: number;
}

/**
 * Every listener's connections under one count and one first-request bound (spec §9,
 * maxConnections and LIM-4). Node's own `headersTimeout` and `requestTimeout` start with a
 * request's first byte, so a connection that never sends one would be held, with its
 * descriptor, until the peer goes. A connection over the cap is closed before a
 * byte of it is read.
 */
export class ConnectionGuard {
  private open = 0;
  private refused = 0;
  private timedOut = 0;
  /** Connections that have not completed their first request yet, by `keyOf`. */
  private readonly waiting = new Map<string | Socket, ReturnType<typeof setTimeout>>();

  constructor(private readonly options: ConnectionGuardOptions) {}

  get counts(): ConnectionCounts {
    return { open: this.open, refused: this.refused, timedOut: this.timedOut };
  }

  /** Guards every connection `server` accepts, ahead of the server's own handling. */
  watch(server: NetServer): void {
    server.prependListener('connection', (socket: Socket) => this.admit(socket));
  }

  /**
   * The connection under `socket` completed a request, an upgrade or a session
   * request: the first-request bound no longer applies. `socket` may be a TLS socket
   * over the one `watch` saw.
   */
  settled(socket: Socket): void {
    const key = keyOf(socket);
    const timer = this.waiting.get(key);
    if (timer === undefined) return;
    clearTimeout(timer);
    this.waiting.delete(key);
  }

  /** Takes a place for a connection that no guarded listener accepted (an HTTP/3 session), or undefined when none is free. */
  enter(): (() => void) | undefined {
    if (this.open >= this.options.maxConnections) {
      this.refused++;
      return undefined;
    }
    this.open++;
    let left = false;
    return () => {
      if (left) return;
      left = true;
      this.open--;
    };
  }

  private admit(socket: Socket): void {
    const leave = this.enter();
    if (!leave) {
      this.options.logger?.warn('refused a connection', { reason: `maxConnections (${this.options.maxConnections}) are open` });
      // Before the listener's own handler reads anything: the refusal costs the accept and the close.
      socket.destroy();
      return;
    }
    // Computed now: a closed socket no longer knows its peer's address.
    const key = keyOf(socket);
    if (this.options.handshakeTimeoutMs > 0) {
      const timer = setTimeout(() => {
        this.waiting.delete(key);
        this.timedOut++;
        this.options.logger?.info('closing a connection that completed no request', { afterMs: this.options.handshakeTimeoutMs });
        socket.destroy();
      }, this.options.handshakeTimeoutMs);
      timer.unref();
      this.waiting.set(key, timer);
    }
    socket.once('close', () => {
      leave();
      const timer = this.waiting.get(key);
      if (timer !== undefined) {
        clearTimeout(timer);
        this.waiting.delete(key);
      }
    });
  }
}

/**
 * One name for a connection whether we hold its TCP socket or the TLS socket over it
 * (an HTTPS or HTTP/2 request only shows the latter): both ends' addresses, unique
 * among open connections. A unix socket's connection has no peer address and no
 * TLS, so it is its own name.
 */
function keyOf(socket: Socket): string | Socket {
  return socket.remotePort === undefined ? socket : `${socket.remoteAddress ?? ''}:${socket.remotePort}>${socket.localAddress ?? ''}:${socket.localPort ?? ''}`;
}
