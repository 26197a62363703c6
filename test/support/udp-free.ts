import { createSocket } from 'node:dgram';

/** Whether a UDP socket can be bound at host:port: nothing else holds it. */
export function udpFree(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createSocket('udp4');
    socket.once('error', () => resolve(false));
    socket.bind(port, host, () => socket.close(() => resolve(true)));
  });
}
