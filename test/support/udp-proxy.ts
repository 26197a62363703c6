import { createSocket, type Socket } from 'node:dgram';
import type { AddressInfo } from 'node:net';
import { withPort } from './tcp-proxy.js';

/**
 * A UDP relay in front of an HTTP/3 server, so a test can lose a QUIC connection the
 * way a network does: after `cut()` no datagram of the flows open then passes either
 * way, and neither peer hears a thing; a new flow (a client dialling again from a new
 * port) passes, as a new TCP connection does through the TCP relay. Each client
 * address gets its own upstream socket.
 */
export class UdpProxy {
  private front: Socket | undefined;
  private readonly upstreams = new Map<string, Socket>();
  /** Client addresses whose flows were cut: nothing passes from them, nor (unless cut one way only) to them. */
  private readonly silenced = new Map<string, 'both' | 'from-client'>();
  private stopped = false;
  port = 0;

  async start(targetPort: number): Promise<this> {
    const front = createSocket('udp4');
    this.front = front;
    front.on('message', (message, from) => {
      const key = `${from.address}:${from.port}`;
      if (this.stopped || this.silenced.has(key)) return;
      let up = this.upstreams.get(key);
      if (!up) {
        up = createSocket('udp4');
        up.on('message', (answer) => {
          if (!this.stopped && this.silenced.get(key) !== 'both') front.send(answer, from.port, from.address);
        });
        this.upstreams.set(key, up);
      }
      up.send(message, targetPort, '127.0.0.1');
    });
    await new Promise<void>((resolve) => front.bind(0, '127.0.0.1', resolve));
    this.port = (front.address() as AddressInfo).port;
    return this;
  }

  /** `url` with its port pointed at the relay. */
  via(url: string): string {
    return withPort(url, this.port);
  }

  /**
   * `from-client`: only the client's datagrams stop, so the server finds the loss first (its
   * keepalive) and the client only once the server has gone quiet too.
   */
  cut(direction: 'both' | 'from-client' = 'both'): void {
    for (const key of this.upstreams.keys()) this.silenced.set(key, direction);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const s of this.upstreams.values()) s.close();
    await new Promise<void>((resolve) => (this.front ? this.front.close(() => resolve()) : resolve()));
  }
}
