import { connect } from 'node:net';

/**
 * A TCP connection to the port behind `url` (the WebSocket's, or WebTransport's
 * HTTP/2) that sends `bytes`, or nothing, and then waits up to `timeoutMs` for the
 * callee to close it (spec §9, LIM-4). `received`: what the callee sent meanwhile.
 */
export function silentSocket(url: string, bytes: string | undefined, timeoutMs: number): Promise<{ closed: boolean; received: number; error?: string }> {
  const target = new URL(url);
  const port = Number(target.port || (target.protocol === 'https:' || target.protocol === 'wss:' ? 443 : 80));
  const host = target.hostname.replace(/^\[(.*)\]$/, '$1');
  return new Promise((resolve) => {
    let received = 0;
    const socket = connect(port, host);
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ closed: false, received });
    }, timeoutMs);
    socket.on('connect', () => {
      if (bytes !== undefined) socket.write(bytes);
    });
    socket.on('data', (chunk: Buffer) => (received += chunk.byteLength));
    socket.on('error', (error) => {
      // A connection that never opened was not closed by the callee for idling.
      if (socket.connecting) {
        clearTimeout(timer);
        resolve({ closed: false, received, error: error.message });
      }
    });
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ closed: true, received });
    });
  });
}
