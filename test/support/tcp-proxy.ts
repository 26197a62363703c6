import { connect, createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

/**
 * A TCP relay in front of a server, so a test can lose the connection the way a
 * network does: `cut()` destroys both sides at once, with no close handshake from
 * either peer; `freeze()` silences them. Connections made later pass.
 */
export class TcpProxy {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  private readonly pairs = new Set<readonly [Socket, Socket]>();
  port = 0;

  async start(targetPort: number): Promise<this> {
    this.server = createServer((client) => {
      const upstream = connect(targetPort, '127.0.0.1');
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
        s.on('error', () => undefined);
      }
      const pair = [client, upstream] as const;
      this.pairs.add(pair);
      client.on('close', () => this.pairs.delete(pair));
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  /** `url` with its port pointed at the relay. */
  via(url: string): string {
    return withPort(url, this.port);
  }

  cut(): void {
    for (const s of this.sockets) s.destroy();
  }

  /**
   * Stops passing bytes either way on the connections open now, and closes nothing: a
   * peer gone silent (a frozen laptop, a pulled cable), found only by a keepalive.
   */
  freeze(): void {
    for (const [client, upstream] of this.pairs) {
      client.unpipe(upstream);
      upstream.unpipe(client);
      client.pause();
      upstream.pause();
    }
  }

  async stop(): Promise<void> {
    this.cut();
    await new Promise((resolve) => this.server?.close(resolve));
  }
}

/** `url` with its port replaced: how a test points a client at a relay (TCP or UDP). */
export function withPort(url: string, port: number): string {
  const u = new URL(url);
  u.port = String(port);
  return u.toString();
}
