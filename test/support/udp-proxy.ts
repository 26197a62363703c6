import { createSocket, type Socket } from 'node:dgram';
import type { AddressInfo } from 'node:net';
import { withPort } from './tcp-proxy.js';

/**
 * A UDP relay in front of an HTTP/3 server, so a test can lose a QUIC connection the
 * way a network does: after `cut()` no datagram passes either way, and neither peer
 * hears a thing. Each client address gets its own upstream socket.
 */
export class UdpProxy {
  private front: Socket | undefined;
  private readonly upstreams = new Map<string, Socket>();
  private cutOff = false;
  port = 0;

  async start(targetPort: number): Promise<this> {
    const front = createSocket('udp4');
    this.front = front;
    front.on('message', (message, from) => {
      if (this.cutOff) return;
      const key = `${from.address}:${from.port}`;
      let up = this.upstreams.get(key);
      if (!up) {
        up = createSocket('udp4');
        up.on('message', (answer) => {
          if (!this.cutOff) front.send(answer, from.port, from.address);
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

  cut(): void {
    this.cutOff = true;
  }

  async stop(): Promise<void> {
    this.cut();
    for (const s of this.upstreams.values()) s.close();
    await new Promise<void>((resolve) => (this.front ? this.front.close(() => resolve()) : resolve()));
  }
}
