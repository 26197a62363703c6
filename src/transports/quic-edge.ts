import type { ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import type { Dispatcher, Identity, Session, SessionTransport, StreamEntry } from '../dispatcher/index.js';
import { writeBatcher } from '../io/index.js';
import { encodeFrame, FrameDecoder } from '../protocol/index.js';
import { callStreamsAllowed, spawnEdge } from '../webtransport/index.js';
import type { ConnectionGuard } from './connection-guard.js';
import { makeEdgeDir } from './edge-dir.js';
import { PATHS } from './webtransport.js';

export interface QuicEdgeOptions {
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

export interface QuicEdge {
  readonly port: number;
  close(): Promise<void>;
}

const RESTARTS_PER_MINUTE = 5;

/**
 * HTTP/3 through a Deno edge process (edge/quic-edge.ts): QUIC and WebTransport end
 * there; each session and each stream comes here over a private unix socket and
 * enters the same session entry as an HTTP/2 WebTransport stream (`openStream`),
 * under the same limits and backpressure. A crashed edge is restarted (at most five
 * times a minute) without touching the other listeners. The edge ends with this
 * process, however it ends, and removes its directory (edge/parent.ts).
 */
export async function startQuicEdge(options: QuicEdgeOptions): Promise<QuicEdge> {
  const { dispatcher } = options;
  const dir = makeEdgeDir();
  const secret = randomBytes(32).toString('hex');
  const socketPath = join(dir, 'bridge.sock');
  writeFileSync(join(dir, 'cert.pem'), options.certPem, { mode: 0o600 });
  writeFileSync(join(dir, 'key.pem'), options.keyPem, { mode: 0o600 });
  const bridge = await listenBridge(socketPath, secret, options);
  const configFile = join(dir, 'config.json');
  writeFileSync(configFile, JSON.stringify({ dir, host: options.host, port: options.port, certFile: join(dir, 'cert.pem'), keyFile: join(dir, 'key.pem'), socket: socketPath, secret, maxStreams: callStreamsAllowed(dispatcher.limits.maxCallsInFlight) + 1, keepaliveMs: options.keepaliveMs }), { mode: 0o600 });

  let child: ChildProcess | undefined;
  let stopping = false;
  const starts: number[] = [];
  const start = async (): Promise<number> => {
    starts.push(Date.now());
    const edge = await spawnEdge('quic-edge.ts', dir, configFile);
    child = edge.child;
    const said = await edge.ready;
    if (typeof said['port'] !== 'number') throw new Error(`the HTTP/3 edge said it is ready on no port: ${JSON.stringify(said)}`);
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
    return said['port'];
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

interface BridgeSession {
  readonly session: Session;
  readonly streams: Map<number, { entry: StreamEntry; socket: Socket }>;
  readonly control: Socket;
}

/** The unix socket the edge connects to: one connection per session, one per stream. */
function listenBridge(socketPath: string, secret: string, options: QuicEdgeOptions): Promise<Server> {
  const { dispatcher } = options;
  const sessions = new Map<string, BridgeSession>();
  const expected = Buffer.from(secret);
  // Half-open: a FIN from the edge is the caller's end of input; our side stays open for the answer.
  const server = createServer({ allowHalfOpen: true }, (socket) => {
    socket.setNoDelay?.(true);
    let head = Buffer.alloc(0);
    const onData = (chunk: Buffer): void => {
      head = Buffer.concat([head, chunk]);
      const at = head.indexOf(10);
      if (at < 0) {
        if (head.byteLength > 4096) socket.destroy();
        return;
      }
      socket.off('data', onData);
      socket.pause();
      let hello: { secret?: string; kind?: string; path?: string; session?: string; n?: number };
      try {
        hello = JSON.parse(head.subarray(0, at).toString('utf8')) as typeof hello;
      } catch {
        return void socket.destroy();
      }
      const given = Buffer.from(String(hello.secret ?? ''));
      if (given.byteLength !== expected.byteLength || !timingSafeEqual(given, expected)) return void socket.destroy();
      const rest = head.subarray(at + 1);
      if (hello.kind === 'session') openSession(socket, String(hello.path ?? ''));
      else if (hello.kind === 'stream') openStream(socket, String(hello.session ?? ''), Number(hello.n), rest);
      else socket.destroy();
    };
    socket.on('data', onData);
    socket.on('error', () => undefined);
  });

  function openSession(control: Socket, path: string): void {
    const codec = PATHS[path];
    if (!codec) return void control.end(`${JSON.stringify({ ok: false, status: 404, reason: `no WebTransport endpoint at ${path}` })}\n`);
    if (!dispatcher.accepting) return void control.end(`${JSON.stringify({ ok: false, status: 503, reason: 'server shutting down' })}\n`);
    const leave = options.guard ? options.guard.enter() : () => undefined;
    if (!leave) return void control.end(`${JSON.stringify({ ok: false, status: 503, reason: 'the server has its maximum of connections open' })}\n`);
    const id = randomUUID();
    const transport: SessionTransport = {
      codec,
      send: () => Promise.reject(new Error("WebTransport frames travel on their call's stream")),
      close: (code, reason) => void control.write(`${JSON.stringify({ close: code, reason })}\n`),
    };
    const session = dispatcher.open(transport, options.anonymousIdentity);
    const entry: BridgeSession = { session, streams: new Map(), control };
    sessions.set(id, entry);
    control.write(`${JSON.stringify({ ok: true, id })}\n`);
    control.resume();
    let pending = '';
    control.on('data', (chunk: Buffer) => {
      pending += chunk.toString('utf8');
      for (let at = pending.indexOf('\n'); at >= 0; at = pending.indexOf('\n')) {
        let message: { reset?: number };
        try {
          message = JSON.parse(pending.slice(0, at)) as typeof message;
        } catch {
          // An edge that speaks nonsense loses its session, never the server.
          return void control.destroy();
        }
        pending = pending.slice(at + 1);
        // The caller reset a stream: that call is aborted (WT-2).
        if (message.reset !== undefined) entry.streams.get(message.reset)?.entry.reset();
      }
    });
    // The bridge's sockets allow half-open streams (a caller's FIN is not the end of its
    // answer); a session's control connection has no such half: the edge's end is the session's.
    control.on('end', () => control.destroy());
    control.on('close', () => {
      leave();
      sessions.delete(id);
      session.close(); // ABT-4: the session's calls end with it
    });
  }

  function openStream(socket: Socket, sessionId: string, n: number, first: Buffer): void {
    const owner = sessions.get(sessionId);
    if (!owner) return void socket.destroy();
    const maxFrameBytes = dispatcher.limits.maxFrameBytes;
    const decoder = new FrameDecoder(maxFrameBytes);
    let reset = false;
    // A turn's frames leave in one write to the edge, which then makes one QUIC write of them.
    const batched = writeBatcher(socket);
    const entry = owner.session.openStream({
      write: (frame) =>
        new Promise<void>((resolve, reject) => {
          if (socket.destroyed) return reject(new Error('stream closed'));
          const bytes = encodeFrame(frame, maxFrameBytes);
          batched(bytes.byteLength, () => socket.write(bytes, (error) => (error ? reject(error) : resolve())));
        }),
      end: () => void socket.end(),
      reset: (reason) => {
        reset = true;
        dispatcher.logger?.debug('http/3 stream reset', { reason });
        owner.control.write(`${JSON.stringify({ reset: n })}\n`);
        socket.destroy();
      },
    });
    owner.streams.set(n, { entry, socket });
    // §5.1, WT-3: a bad length prefix, or a FIN inside a frame, ends this stream only.
    const refuse = (error: unknown): void => {
      if (!reset) {
        reset = true;
        entry.reset();
        owner.control.write(`${JSON.stringify({ reset: n })}\n`);
        socket.destroy();
      }
      dispatcher.logger?.debug('http/3 stream ended', { error: String(error) });
    };
    const take = (chunk: Buffer): void => {
      try {
        for (const body of decoder.push(chunk)) {
          if (reset) return;
          entry.receive(body);
        }
      } catch (error) {
        refuse(error);
      }
    };
    if (first.byteLength > 0) take(first);
    socket.on('data', take);
    socket.on('end', () => {
      if (reset) return;
      try {
        decoder.end();
      } catch (error) {
        return refuse(error);
      }
      entry.end(); // FIN: the caller's end of input (WT-2)
    });
    socket.on('close', () => owner.streams.delete(n));
    socket.resume();
  }

  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => resolve(server));
  });
}
