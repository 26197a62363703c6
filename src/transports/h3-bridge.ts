import type { ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import type { Dispatcher, Identity, FrameTransport } from '../dispatcher/index.js';
import { BRIDGE_LINE_MAX_BYTES, bridgeLine, bridgeMessages, BridgeMux, callStreamsAllowed, parseBridgeLine, spawnEdge, type BridgeMessage } from '../webtransport/index.js';
import { pumpCallStream } from './call-stream.js';
import type { ConnectionGuard } from './connection-guard.js';
import { makeEdgeDir } from './edge-dir.js';
import { PATHS } from './webtransport.js';

export interface H3BridgeOptions {
  readonly dispatcher: Dispatcher;
  readonly host: string;
  /** The UDP port for HTTP/3; the WebTransport HTTP/2 port by convention. */
  readonly port: number;
  readonly certPem: string;
  readonly keyPem: string;
  /**
   * The identity of callers without a token. The edge cannot see a browser's Origin
   * (Deno's WebTransport server does not expose the request's headers), so this is
   * the anonymous identity only while the certificate is the server's own fresh one,
   * whose hash a page can only learn from the operator (spec §10.1); otherwise null.
   */
  readonly anonymousIdentity: Identity | null;
  /** §5.5 on QUIC: a PING this often, and a connection silent for two intervals is closed; 0 leaves Deno's defaults. */
  readonly keepaliveMs: number;
  /** The server's connection count (§9): each HTTP/3 session takes a place in it. */
  readonly guard?: ConnectionGuard;
}

export interface H3Bridge {
  readonly port: number;
  close(): Promise<void>;
}

const RESTARTS_PER_MINUTE = 5;

/**
 * HTTP/3 through a Deno edge process (edge/h3-server-edge.ts): QUIC and WebTransport end
 * there; each session comes here over a private unix socket (the bridge,
 * src/webtransport/bridge-protocol.ts), its streams multiplexed on it (bridge-mux.ts), and each stream is served by the same pump as an
 * HTTP/2 WebTransport stream (./call-stream.ts), under the same limits and backpressure.
 * A crashed edge is restarted (at most five times a minute) without touching the other
 * listeners. The edge ends with this process, however it ends, and removes its
 * directory (edge/parent.ts).
 */
export async function startH3Bridge(options: H3BridgeOptions): Promise<H3Bridge> {
  const { dispatcher } = options;
  const dir = makeEdgeDir();
  const secret = randomBytes(32).toString('hex');
  const socketPath = join(dir, 'bridge.sock');
  writeFileSync(join(dir, 'cert.pem'), options.certPem, { mode: 0o600 });
  writeFileSync(join(dir, 'key.pem'), options.keyPem, { mode: 0o600 });
  const bridge = await listenBridge(socketPath, secret, options);
  const configFile = join(dir, 'config.json');
  const config: BridgeMessage<'serverEdgeConfig'> = {
    type: bridgeMessages.serverEdgeConfig.type,
    dir,
    host: options.host,
    port: options.port,
    certFile: join(dir, 'cert.pem'),
    keyFile: join(dir, 'key.pem'),
    socket: socketPath,
    secret,
    maxStreams: callStreamsAllowed(dispatcher.limits.maxCallsInFlight) + 1,
    keepaliveMs: options.keepaliveMs,
  };
  writeFileSync(configFile, JSON.stringify(config), { mode: 0o600 });

  let child: ChildProcess | undefined;
  let stopping = false;
  const starts: number[] = [];
  const start = async (): Promise<number> => {
    starts.push(Date.now());
    const edge = await spawnEdge('h3-server-edge.ts', dir, configFile);
    child = edge.child;
    const said = await edge.ready;
    if (said.port === undefined) throw new Error(`the HTTP/3 edge said it is ready on no port: ${JSON.stringify(said)}`);
    edge.child.once('exit', (code, signal) => {
      if (stopping) return;
      dispatcher.logger?.warn('the HTTP/3 edge exited; restarting it', { code, signal, stderr: edge.stderr().slice(-500) });
      const recent = starts.filter((t) => Date.now() - t < 60_000);
      if (recent.length >= RESTARTS_PER_MINUTE) {
        dispatcher.logger?.error('the HTTP/3 edge keeps failing; HTTP/3 is off until the server restarts', {});
        return;
      }
      setTimeout(() => void start().catch((error: unknown) => dispatcher.logger?.error('the HTTP/3 edge did not restart', { error: String(error) })), 1000).unref();
    });
    return said.port;
  };

  let port: number;
  try {
    port = await start();
  } catch (error) {
    child?.kill('SIGTERM');
    bridge.close();
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  return {
    port,
    async close() {
      stopping = true;
      child?.kill('SIGTERM');
      bridge.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The unix socket the edge connects to: one connection per session, its streams multiplexed on it (src/webtransport/bridge-mux.ts). */
function listenBridge(socketPath: string, secret: string, options: H3BridgeOptions): Promise<Server> {
  const { dispatcher } = options;
  const expected = Buffer.from(secret);
  // Streams a session may have open on the bridge: what QUIC lets its caller open, with room
  // for streams whose end is still crossing the bridge.
  const maxStreams = 2 * (callStreamsAllowed(dispatcher.limits.maxCallsInFlight) + 1);
  const server = createServer((socket) => {
    socket.setNoDelay?.(true);
    socket.on('error', () => undefined);
    let head = Buffer.alloc(0);
    const onData = (chunk: Buffer): void => {
      head = Buffer.concat([head, chunk]);
      const at = head.indexOf(10);
      if (at < 0) {
        if (head.byteLength > BRIDGE_LINE_MAX_BYTES) socket.destroy();
        return;
      }
      socket.off('data', onData);
      socket.pause();
      let hello: BridgeMessage<'session'>;
      try {
        hello = parseBridgeLine(head.subarray(0, at).toString('utf8'), ['session']);
      } catch (error) {
        // Whoever sent it loses this connection, never the server.
        dispatcher.logger?.warn('refused an HTTP/3 bridge connection', { error: String(error) });
        return void socket.destroy();
      }
      const given = Buffer.from(hello.secret);
      if (given.byteLength !== expected.byteLength || !timingSafeEqual(given, expected)) return void socket.destroy();
      openSession(socket, hello.url, head.subarray(at + 1));
    };
    socket.on('data', onData);
  });

  function refuse(control: Socket, status: number, reason: string): void {
    control.end(bridgeLine<'refused'>({ type: 'refused', status, reason }));
  }

  function openSession(control: Socket, url: string, early: Buffer): void {
    const path = URL.canParse(url) ? new URL(url).pathname : '';
    const codec = Object.hasOwn(PATHS, path) ? PATHS[path] : undefined;
    if (!codec) return refuse(control, 404, `no WebTransport endpoint at ${path.slice(0, 200)}`);
    if (!dispatcher.accepting) return refuse(control, 503, 'server shutting down');
    const leave = options.guard ? options.guard.enter() : () => undefined;
    if (!leave) return refuse(control, 503, 'the server has its maximum of connections open');
    const id = randomUUID();
    let lost = false;
    const mux = new BridgeMux({
      opens: false,
      maxStreams,
      write: (parts) => {
        control.cork();
        for (const part of parts) control.write(part);
        control.uncork();
      },
      // Each caller's stream is served by the same pump as an HTTP/2 one; a reset either way is a mux frame.
      onStream: (stream) => void pumpCallStream(stream, connection.openStream.bind(connection), dispatcher, { name: 'http/3' }),
      // The QUIC connection was lost, not closed: resumable calls wait for their caller (§4.9).
      onLost: () => {
        lost = true;
        connection.lost();
      },
      onViolation: (error) => {
        // An edge that speaks nonsense loses its session, never the server.
        dispatcher.logger?.warn('ended an HTTP/3 session: its bridge broke the protocol', { session: id, error: error.message });
        control.destroy();
      },
    });
    const transport: FrameTransport = {
      codec,
      send: () => Promise.reject(new Error("WebTransport frames travel on their call's stream")),
      close: (code, reason) => mux.close(code, reason),
    };
    const connection = dispatcher.open(transport, options.anonymousIdentity);
    control.write(bridgeLine<'accepted'>({ type: 'accepted', id }));
    control.on('data', (chunk: Buffer) => mux.receive(chunk));
    if (early.byteLength > 0) mux.receive(early);
    control.resume();
    control.on('close', () => {
      // Closed rather than lost cancels the session's resumable calls: a resume that finds none starts here.
      dispatcher.logger?.debug('an HTTP/3 session ended', { session: id, how: lost ? 'lost' : 'closed' });
      leave();
      connection.close(); // ABT-4: the session's calls end with it (unless it said `lost` first)
      // Streams still open (a lost QUIC connection leaves them unended) end now, after their calls were decided.
      mux.end();
    });
  }

  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => resolve(server));
  });
}
