import type { IncomingMessage, Server as HttpServer } from 'node:http';
import type { Server as HttpsServer } from 'node:https';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import { OutboundGauge, type Dispatcher, type Identity, type FrameTransport } from '../dispatcher/index.js';
import { writeBatcher } from '../io/index.js';
import { closeCodes, SHUTDOWN_REASON, codecForSubprotocol, codecs, limits, sniffCodec, subprotocols, type Codec } from '../protocol/index.js';
import { bearerToken } from './auth.js';
import { requestPath } from './request-path.js';
import { Keepalive } from './keepalive.js';
import { checkBrowserRequest, SAME_ORIGIN_ONLY, type OriginPolicy } from './origin.js';

export interface WebSocketTransportOptions {
  /** Sessions, limits, auth: one dispatcher for every transport of a server. */
  readonly dispatcher: Dispatcher;
  /** URL paths served; spec/PROTOCOL.md §5.2. Default `/callwire` and the reference's `/alknet/call` (§13). */
  readonly paths?: readonly string[];
  /** Which browser pages may connect (§10.1); by default none but the server's own. */
  readonly originPolicy?: OriginPolicy;
  /** Ping interval; a connection silent for a whole interval after a ping is closed (§5.5). 0: off. */
  readonly keepaliveMs?: number;
  /** Per-message compression; off by default (spec §5.2). */
  readonly perMessageDeflate?: boolean;
}

export interface WebSocketTransport {
  /**
   * Handles one HTTP upgrade request; false when it is not for one of our paths, so
   * an embedder with a `noServer` setup can pass it on to its own handlers.
   */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean;
  /** Stops accepting and closes every socket with 1001 (after the dispatcher's shutdown). */
  close(): Promise<void>;
}

const SUPPORTED = new Set(Object.values(subprotocols));
const DEFAULT_PATHS = ['/callwire', '/alknet/call'];

/**
 * The protocol over WebSocket: one envelope per binary message, codec by subprotocol,
 * calls multiplexed by id (spec §5.2). `server`: attach to its `upgrade` event and answer
 * every upgrade on it (404 for other paths); to share a server's upgrades with handlers of
 * your own, leave it out and call `handleUpgrade` from your own listener (as `ws`'s
 * `noServer` does).
 */
export function createWebSocketTransport(options: WebSocketTransportOptions, server?: HttpServer | HttpsServer): WebSocketTransport {
  const { dispatcher } = options;
  const paths = new Set(options.paths ?? DEFAULT_PATHS);
  const policy = options.originPolicy ?? SAME_ORIGIN_ONLY;
  const maxOutbound = dispatcher.limits.maxOutboundBytesPerConnection;
  const sockets = new Set<WebSocket>();
  const keepalive = new Keepalive(options.keepaliveMs ?? limits.keepaliveMs, () => dispatcher.logger?.info('closing a silent connection', { after: 'keepalive' }));
  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: dispatcher.limits.maxFrameBytes,
    perMessageDeflate: options.perMessageDeflate ?? false,
    // WS-4: the first offered protocol we speak, in the caller's order.
    handleProtocols: (offered) => [...offered].find((p) => SUPPORTED.has(p)) ?? false,
  });

  const handleUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer): boolean => {
    const path = requestPath(req.url);
    if (path === undefined || !paths.has(path)) return false; // another handler's
    if (!dispatcher.accepting) return refuse(socket, 503, 'server is shutting down');
    const verdict = checkBrowserRequest(policy, req.headers.origin, req.headers.host);
    if (!verdict.ok) {
      dispatcher.logger?.warn('refused a connection', { reason: verdict.reason });
      return refuse(socket, verdict.status, verdict.reason);
    }
    const offered = (req.headers['sec-websocket-protocol'] ?? '').split(',').map((p) => p.trim()).filter(Boolean);
    if (offered.length > 0 && !offered.some((p) => SUPPORTED.has(p))) {
      return refuse(socket, 400, `unsupported subprotocol; offer one of: ${[...SUPPORTED].join(', ')}`); // WS-6
    }
    let identity: Identity | null = dispatcher.anonymousIdentity;
    const token = bearerToken(req.headers.authorization);
    if (token !== undefined) {
      const found = dispatcher.authenticate?.(token);
      if (!found) {
        dispatcher.refusedToken({ transport: 'websocket', operationId: '', requestBytes: 0 });
        return refuse(socket, 401, 'invalid token'); // the token itself is never echoed
      }
      identity = found;
    }
    wss.handleUpgrade(req, socket, head, (ws) => serve(ws, req, codecForSubprotocol(ws.protocol), identity));
    return true;
  };
  // Attached to a server, the transport answers every upgrade on it: one for a path it does
  // not serve gets 404 at once, naming the paths it does, rather than a client's timeout.
  const onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    if (!handleUpgrade(req, socket, head)) refuse(socket, 404, unservedPath(requestPath(req.url), [...paths]));
  };
  server?.on('upgrade', onUpgrade);

  function serve(ws: WebSocket, req: IncomingMessage, negotiated: Codec | undefined, identity: Identity | null): void {
    req.socket.setNoDelay(true);
    sockets.add(ws);
    // WS-5, REF-2: without a subprotocol, the first frame's first byte picks the codec.
    let sniffed = negotiated !== undefined;
    // BP-3, BP-4: over the bound, stop reading the peer and let the connection's pull sources wait.
    const outbound = new OutboundGauge(maxOutbound, () => {
      if (ws.readyState === ws.OPEN) ws.resume();
      connection.drained();
    });
    const batched = writeBatcher(req.socket);
    // A send fails once the socket is closing, before its close event says how: a close frame ends every
    // call, a broken socket leaves resumable ones waiting for their caller (§4.9). A failed send is
    // reported after that event, so it never decides it; when the close is ours, it is clean at once.
    const closed = new Promise<void>((resolve) => ws.once('close', () => resolve()));
    let closeFrameSent = false;
    const failAfterClose = (reject: (error: Error) => void, error: Error): void => {
      if (closeFrameSent) connection.close();
      void closed.then(() => reject(error));
    };
    const transport: { -readonly [K in keyof FrameTransport]: FrameTransport[K] } = {
      codec: negotiated ?? codecs.msgpack,
      congested: () => outbound.congested,
      send: (frame) =>
        new Promise<void>((resolve, reject) => {
          if (ws.readyState !== ws.OPEN) return failAfterClose(reject, new Error('socket closed'));
          if (outbound.add(frame.byteLength)) ws.pause();
          batched(frame.byteLength, () =>
            ws.send(frame, { binary: true }, (error) => {
              outbound.taken(frame.byteLength);
              if (error) failAfterClose(reject, error);
              else resolve();
            }),
          );
        }),
      close: (code, reason) => {
        closeFrameSent = true;
        ws.close(code, reason);
      },
    };
    const connection = dispatcher.open(transport, identity);
    keepalive.track(ws, req.socket);
    ws.on('message', (data, isBinary) => {
      if (!isBinary) {
        ws.close(closeCodes.TEXT_MESSAGE, 'text messages are not allowed; send binary frames'); // WS-1
        return;
      }
      const bytes = toBytes(data);
      if (!sniffed) {
        sniffed = true;
        transport.codec = sniffCodec(bytes);
      }
      connection.receive(bytes);
    });
    ws.on('close', (code) => {
      keepalive.untrack(ws);
      sockets.delete(ws);
      // 1006: no close frame (the socket broke, or keepalive dropped a silent peer): resumable calls
      // wait for their caller (§4.9). A close frame, from either side, ends every call (ABT-4), also
      // one the peer never answered (its close reports 1006).
      if (code === closeCodes.ABNORMAL && !closeFrameSent) connection.lost();
      else connection.close();
    });
    ws.on('error', (error) => dispatcher.logger?.debug('websocket error', { error: error.message }));
  }

  return {
    handleUpgrade,
    async close() {
      for (const ws of sockets) ws.close(closeCodes.GOING_AWAY, SHUTDOWN_REASON);
      await Promise.all(
        [...sockets].map(
          (ws) =>
            new Promise<void>((resolve) => {
              const timer = setTimeout(() => {
                ws.terminate();
                resolve();
              }, 1000);
              ws.once('close', () => {
                clearTimeout(timer);
                resolve();
              });
            }),
        ),
      );
      server?.off('upgrade', onUpgrade);
      wss.close();
    },
  };
}

function toBytes(data: Buffer | ArrayBuffer | Buffer[]): Uint8Array {
  if (Array.isArray(data)) return Buffer.concat(data);
  return data instanceof ArrayBuffer ? new Uint8Array(data) : data;
}

/** The answer to an upgrade for a path that is not served: which paths are. */
export function unservedPath(path: string | undefined, served: readonly string[]): string {
  return `no WebSocket endpoint at ${(path ?? '(unreadable path)').slice(0, 200)}; callwire serves WebSocket at ${served.join(' and ')}`;
}

function refuse(socket: Duplex, status: number, message: string): true {
  const reason = { 400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not Found', 503: 'Service Unavailable' }[status] ?? 'Error';
  socket.end(`HTTP/1.1 ${status} ${reason}\r\nConnection: close\r\nContent-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(message)}\r\n\r\n${message}`);
  return true;
}
