import { connect, createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

/**
 * A TCP relay in front of a server, so a test can lose the connection the way a
 * network does: `cut()` destroys both sides at once, with no close handshake from
 * either peer.
 */
export class TcpProxy {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  /** Set by `down()`: a new connection is closed as soon as it comes, as if nothing answered. */
  private isDown = false;
  /** Hears each connection the relay takes through (none while it is down). */
  onConnection: (() => void) | undefined;
  port = 0;

  async start(targetPort: number): Promise<this> {
    this.server = createServer((client) => {
      if (this.isDown) return void client.destroy();
      this.onConnection?.();
      const upstream = connect(targetPort, '127.0.0.1');
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
        s.on('error', () => undefined);
      }
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

  /** Cuts every connection, and every new one until `up()`: a link that stays cut for a while. */
  down(): void {
    this.isDown = true;
    this.cut();
  }

  up(): void {
    this.isDown = false;
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
