import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';

/**
 * A loopback TCP listener that nothing should reach: it records every connection
 * and the first bytes each one sent, so a test can show the server never made a
 * request a caller steered at it.
 */
export class Bystander {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  /** The first bytes of each connection that reached it, as text. */
  readonly received: string[] = [];
  port = 0;

  async start(): Promise<this> {
    this.server = createServer((socket) => {
      const index = this.received.push('') - 1;
      this.sockets.add(socket);
      socket.on('data', (chunk: Buffer) => (this.received[index] += chunk.toString('latin1')));
      socket.on('error', () => undefined);
      // Never answers: a request that got here would hang, not succeed.
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
