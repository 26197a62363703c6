import { connect, createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

/** Which way bytes cross the relay: `down` from the server to the client, `up` the other way. */
export type Direction = 'down' | 'up';

/**
 * What a cut ends: `both` sides of every connection; or only the `client`'s, while the
 * server's side stays open and is no longer read, as when the client's network
 * changed: the server has not noticed when the client comes back.
 */
export type CutSide = 'both' | 'client';

/**
 * A TCP relay in front of a server, so a test can lose the connection the way a
 * network does: `cut()` destroys both sides at once, with no close handshake from
 * either peer; `down()` also turns away every new connection until `up()`, as a
 * network that is down would, and `cutFor(ms)` does both for `ms`; `cutAfterBytes`
 * does that once a given amount of output has crossed, so the cut lands in the
 * middle of a stream; `freeze()` silences the connections open now.
 */
export class TcpProxy {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  /** Each client-side socket's upstream. */
  private readonly upstreams = new Map<Socket, Socket>();
  /** Upstreams left open by a cut of the client's side only. */
  private readonly held = new Set<Socket>();
  private refusing = false;
  /** What the last `freeze()` silenced: one direction, or both (undefined). */
  private frozen: Direction | undefined;
  private trigger: { direction: Direction; remaining: number; ms: number; side: CutSide } | undefined;
  port = 0;
  /** Connections relayed to the server. */
  accepted = 0;
  /** Connections turned away while the relay was cut. */
  refused = 0;
  /** Cuts made by `down`, `cutFor` and `cutAfterBytes`. */
  cuts = 0;
  /** Hears each connection the relay takes through (none while it is down). */
  onConnection: (() => void) | undefined;
  /** Bytes relayed each way, over every connection. */
  readonly relayed: Record<Direction, number> = { down: 0, up: 0 };
  private restored: Promise<void> = Promise.resolve();
  private target = { port: 0, host: '127.0.0.1' };

  async start(targetPort: number, targetHost = '127.0.0.1'): Promise<this> {
    this.target = { port: targetPort, host: targetHost };
    this.server = createServer((client) => {
      if (this.refusing) {
        this.refused++;
        client.on('error', () => undefined);
        // A reset, not a FIN: to the client it is a connection that failed, not one that ended.
        client.resetAndDestroy();
        return;
      }
      this.accepted++;
      this.onConnection?.();
      const upstream = connect(this.target.port, this.target.host);
      this.upstreams.set(client, upstream);
      // One side gone (the server refused, died, or a cut) ends the other, unless a cut holds it open.
      client.on('close', () => {
        this.upstreams.delete(client);
        if (!this.held.has(upstream)) upstream.destroy();
      });
      upstream.on('close', () => {
        this.held.delete(upstream);
        client.destroy();
      });
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
        s.on('error', () => undefined);
      }
      this.relay(client, upstream, 'up');
      this.relay(upstream, client, 'down');
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  /** `url` with its port pointed at the relay. */
  via(url: string): string {
    return withPort(url, this.port);
  }

  /** New connections go to `port` from now on (another server behind the same address); open ones stay where they are. */
  retarget(port: number, host = '127.0.0.1'): void {
    this.target = { port, host };
  }

  cut(): void {
    for (const s of this.sockets) s.destroy();
  }

  /** Cuts every connection (`side`), and turns every new one away until `up()`: a link that stays cut for a while. */
  down(side: CutSide = 'both'): void {
    this.cuts++;
    this.refusing = true;
    if (side === 'both') return this.cut();
    for (const [client, upstream] of this.upstreams) {
      this.held.add(upstream);
      upstream.pause();
      client.destroy();
    }
  }

  up(): void {
    this.refusing = false;
  }

  /** `down(side)` for `ms`; resolves when it accepts again. */
  cutFor(ms: number, side: CutSide = 'both'): Promise<void> {
    this.down(side);
    this.restored = new Promise<void>((resolve) =>
      setTimeout(() => {
        this.up();
        resolve();
      }, ms),
    );
    return this.restored;
  }

  /**
   * Arms one `cutFor(ms)` for when `bytes` more have crossed `direction` (counted over
   * every connection). The chunk that reaches the count is not relayed: it is lost
   * with the connection, as bytes in flight are.
   */
  cutAfterBytes(bytes: number, ms: number, direction: Direction = 'down', side: CutSide = 'both'): void {
    this.trigger = { direction, remaining: bytes, ms, side };
  }

  /** Resolves when the last cut is over (at once when there was none). */
  whenRestored(): Promise<void> {
    return this.restored;
  }

  /**
   * Stops passing bytes either way (or only `direction`) on the connections open now, and
   * closes nothing: a peer gone silent (a frozen laptop, a pulled cable), found only by a
   * keepalive; one way only, a peer whose writes stall while it still reads.
   */
  freeze(direction?: Direction): void {
    for (const [client, upstream] of this.upstreams) {
      const from = direction === 'up' ? [client] : direction === 'down' ? [upstream] : [client, upstream];
      for (const socket of from) {
        socket.removeAllListeners('data');
        socket.pause();
      }
    }
    this.frozen = direction;
  }

  /** Passes bytes again on the connections `freeze()` silenced: a peer back before its keepalive gave up on it. */
  thaw(): void {
    for (const [client, upstream] of this.upstreams) {
      if (this.frozen !== 'down') {
        this.relay(client, upstream, 'up', false);
        client.resume();
      }
      if (this.frozen !== 'up') {
        this.relay(upstream, client, 'down', false);
        upstream.resume();
      }
    }
  }

  async stop(): Promise<void> {
    this.trigger = undefined;
    this.cut();
    await new Promise((resolve) => this.server?.close(resolve));
  }

  /** `from` → `to` with the back-pressure of a pipe, counting, and cutting when the trigger's count is reached. */
  private relay(from: Socket, to: Socket, direction: Direction, ends = true): void {
    from.on('data', (chunk: Buffer) => {
      const trigger = this.trigger;
      if (trigger?.direction === direction) {
        trigger.remaining -= chunk.length;
        if (trigger.remaining <= 0) {
          this.trigger = undefined;
          void this.cutFor(trigger.ms, trigger.side);
          return;
        }
      }
      this.relayed[direction] += chunk.length;
      if (!to.write(chunk)) {
        from.pause();
        to.once('drain', () => from.resume());
      }
    });
    if (ends) from.on('end', () => to.end());
  }
}

/** `url` with its port replaced: how a test points a client at a relay (TCP or UDP). */
export function withPort(url: string, port: number): string {
  const u = new URL(url);
  u.port = String(port);
  return u.toString();
}
