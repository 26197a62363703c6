import { chmodSync, existsSync, statSync, unlinkSync } from 'node:fs';
import { createServer, type IncomingMessage, type RequestListener, type Server } from 'node:http';
import { connect } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Logger } from '../dispatcher/index.js';
import type { ConnectionGuard } from '../transports/index.js';

export interface UnixListener {
  /** `ws+unix:///path:/callwire`, as the SDK, the CLI and the `ws` package take it. */
  readonly url: string;
  close(): Promise<void>;
}

/**
 * The WebSocket and HTTP calls on a unix socket beside the TCP port, for callers on the
 * same machine (docs/transports.md "Transports"): no loopback TCP between them and the server, and
 * access by the file's permissions, 0600 (the server's user), as the Docker socket
 * does it. A socket file left by a server that died is replaced; one still in use is
 * refused. No browser can reach it, so §10.1 has nothing to check here.
 */
export async function listenUnix(path: string, onRequest: RequestListener, onUpgrade: (req: IncomingMessage, socket: Duplex, head: Buffer) => boolean, guard: ConnectionGuard, logger: Logger): Promise<UnixListener> {
  if (existsSync(path)) {
    if (!statSync(path).isSocket()) throw new Error(`${path} exists and is not a socket: not replacing it`);
    if (await answers(path)) throw new Error(`${path} is in use by another server`);
    unlinkSync(path); // a dead server's socket
  }
  const server: Server = createServer(onRequest);
  guard.watch(server);
  server.on('checkContinue', onRequest);
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    if (!onUpgrade(req, socket, head)) socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(path, () => resolve());
  });
  chmodSync(path, 0o600);
  // Out of descriptors, accept fails on the listener: logged, and the server serves on.
  server.on('error', (error) => logger.error('the unix socket listener failed to accept', { error: error.message }));
  return {
    url: `ws+unix://${path}:/callwire`,
    async close() {
      server.closeAllConnections?.();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** Whether something accepts connections on the unix socket at `path`. */
function answers(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = connect(path);
    probe.once('connect', () => {
      probe.destroy();
      resolve(true);
    });
    probe.once('error', () => resolve(false));
  });
}
