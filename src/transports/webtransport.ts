import type { Http2SecureServer, Http2Session, ServerHttp2Stream } from 'node:http2';
import type { Socket } from 'node:net';
import { randomBytes } from 'node:crypto';
import type { Dispatcher, FrameTransport } from '../dispatcher/index.js';
import { closeCodes, codecs, limits, SHUTDOWN_REASON, type Codec } from '../protocol/index.js';
import { pumpCallStream } from './call-stream.js';
import type { ConnectionGuard } from './connection-guard.js';
import { startHttp2Keepalive } from './keepalive.js';
import { watchHttp2SessionEnd, type SessionEndWatch } from './wt-session-end.js';
import { checkBrowserRequest, SAME_ORIGIN_ONLY, type OriginPolicy } from './origin.js';
import { callStreamsAllowed, loadWebTransport, webTransportWindows, type WtServer, type WtSession, type WtSessionAnswer } from '../webtransport/index.js';

export interface WebTransportServerOptions {
  /** Sessions, limits, auth: one dispatcher for every transport of a server. */
  readonly dispatcher: Dispatcher;
  readonly host: string;
  /** 0 picks a free port. */
  readonly port: number;
  readonly certPem: string;
  readonly keyPem: string;
  /** Which browser pages may open a session (§10.1); by default none. */
  readonly originPolicy?: OriginPolicy;
  /** HTTP/2 PING interval; a connection that leaves one unanswered for an interval is dropped (§5.5). 0: off. */
  readonly keepaliveMs?: number;
  /** The server's connection count and first-request bound (§9 maxConnections, LIM-4), applied to the HTTP/2 port. */
  readonly guard?: ConnectionGuard;
  /**
   * Whether to serve HTTP/3 too, on the same port over UDP, when the library's native
   * transport loads (default true). False: no UDP listener at all (`serve --no-http3`).
   */
  readonly http3?: boolean;
}

export interface WebTransportListener {
  readonly port: number;
  /** Whether HTTP/3 (QUIC) is served too; false when turned off or the native transport is missing. */
  readonly http3: boolean;
  readonly http3Reason: string;
  /** Stops accepting and closes every session with 1001 (after the dispatcher's shutdown). */
  close(): Promise<void>;
}

/** spec/PROTOCOL.md §5.4: the session path picks the codec (HTTP/2 and the HTTP/3 edge alike). */
export const PATHS: Readonly<Record<string, Codec>> = {
  '/callwire': codecs.msgpack,
  '/callwire/msgpack': codecs.msgpack,
  '/callwire/json': codecs.json,
};

/**
 * HTTP/3 needs the optional native package, which cannot be installed everywhere.
 * Probe it with a time limit: the library itself never settles when it is missing.
 */
export async function probeHttp3(timeoutMs = 2000): Promise<{ ok: boolean; reason: string }> {
  const name = '@fails-components/webtransport-transport-http3-quiche';
  const attempt = import(name).then(
    () => ({ ok: true, reason: 'native HTTP/3 transport loaded' }),
    (error: unknown) => ({
      ok: false,
      reason: (error as { code?: string }).code === 'ERR_MODULE_NOT_FOUND' ? `${name} is not installed` : `${name} does not load: ${String(error).split('\n')[0]}`,
    }),
  );
  const timeout = new Promise<{ ok: boolean; reason: string }>((resolve) =>
    setTimeout(() => resolve({ ok: false, reason: `${name} did not load within ${timeoutMs} ms` }), timeoutMs).unref(),
  );
  return Promise.race([attempt, timeout]);
}

/**
 * Serves the protocol over WebTransport: a bidirectional stream per call, or shared
 * call streams that carry many (spec §5.4, WTS-1), each served by the call-stream
 * pump (./call-stream.ts) into its session.
 */
export async function listenWebTransport(options: WebTransportServerOptions): Promise<WebTransportListener> {
  const { dispatcher } = options;
  const lib = await loadWebTransport();
  const args = {
    port: options.port,
    host: options.host,
    secret: randomBytes(32).toString('hex'),
    cert: options.certPem,
    privKey: options.keyPem,
    ...webTransportWindows,
    // Never fewer than a caller assumes before our settings arrive (the library's callers do).
    initialBidirectionalStreams: Math.max(webTransportWindows.initialBidirectionalStreams, callStreamsAllowed(dispatcher.limits.maxCallsInFlight)),
  };
  // Every session request passes the origin and host rules before it is accepted (§10.1).
  const answer = async ({ header }: { header: Record<string, string | undefined> }): Promise<WtSessionAnswer> => {
    const path = header[':path'] ?? '';
    if (!(path in PATHS)) return { status: 404 };
    const verdict = checkBrowserRequest(options.originPolicy ?? SAME_ORIGIN_ONLY, header['origin'], header[':authority'] ?? header['host']);
    if (verdict.ok) return { status: 200, path, userData: {} };
    dispatcher.logger?.warn('refused a WebTransport session', { reason: verdict.reason });
    return { status: verdict.status };
  };
  const http2 = new lib.Http2Server(args);
  http2.setRequestCallback(answer);
  http2.startServer();
  await http2.ready;
  // The library keeps its node:http2 server inside; PINGs are the HTTP/2 keepalive.
  const h2 = (http2 as unknown as { transportInt?: { serverInt?: Http2SecureServer } }).transportInt?.serverInt;
  if (!h2) dispatcher.logger?.warn('WebTransport keepalive and connection limits are off: the library no longer exposes its HTTP/2 server (transportInt.serverInt)');
  if (h2 && options.guard) {
    const guard = options.guard;
    guard.watch(h2);
    // A session request is a stream; so is any other request the library answers (404 and the like).
    h2.on('stream', (stream: ServerHttp2Stream) => {
      // A session destroyed meanwhile has no socket left to settle; its close already did.
      const socket = stream.session?.socket as Socket | undefined;
      if (socket) guard.settled(socket);
    });
  }
  h2?.on('session', (session: Http2Session) =>
    startHttp2Keepalive(session, options.keepaliveMs ?? limits.keepaliveMs, () => dispatcher.logger?.info('closing a silent WebTransport connection', { after: 'keepalive' })),
  );
  const port = http2.port ?? options.port;
  const servers: WtServer[] = [http2];
  const probe = options.http3 === false ? { ok: false, reason: 'turned off' } : await probeHttp3();
  if (probe.ok) {
    const http3 = new lib.Http3Server({ ...args, port });
    http3.setRequestCallback(answer);
    http3.startServer();
    await http3.ready;
    servers.push(http3);
  }

  const wtSessions = new Map<WtSession, SessionEndWatch>();
  for (const server of servers) {
    for (const [path, codec] of Object.entries(PATHS)) {
      void acceptSessions(server.sessionStream(path), codec);
    }
  }

  async function acceptSessions(stream: ReadableStream<WtSession>, codec: Codec): Promise<void> {
    const reader = stream.getReader();
    for (;;) {
      const next = await reader.read().catch(() => ({ done: true as const, value: undefined }));
      if (next.done) return;
      if (!dispatcher.accepting) {
        next.value.close({ closeCode: closeCodes.GOING_AWAY, reason: SHUTDOWN_REASON });
        continue;
      }
      void serveSession(next.value, codec).catch((error: unknown) => dispatcher.logger?.debug('webtransport session failed', { error: String(error) }));
    }
  }

  async function serveSession(wt: WtSession, codec: Codec): Promise<void> {
    await wt.ready;
    const transport: FrameTransport = {
      codec,
      // Every frame of a call goes on its own stream; nothing is sent on the session itself.
      send: () => Promise.reject(new Error('WebTransport frames travel on their call\'s stream')),
      close: (code, reason) => closeSession(wt, code, reason),
    };
    const connection = dispatcher.open(transport);
    // A session either side closed ends its calls (ABT-4); a lost one leaves its resumable calls to their caller (§4.9).
    wtSessions.set(
      wt,
      watchHttp2SessionEnd(wt, (how) => {
        wtSessions.delete(wt);
        if (how === 'lost') connection.lost();
        else connection.close();
      }),
    );

    const streams = wt.incomingBidirectionalStreams.getReader();
    for (;;) {
      const next = await streams.read().catch(() => ({ done: true as const, value: undefined }));
      if (next.done) return;
      void pumpCallStream(next.value, connection.openStream.bind(connection), dispatcher, { name: 'webtransport' });
    }
  }

  /** Our own close of a session: a clean end for its calls, whatever becomes of its stream. */
  function closeSession(wt: WtSession, code: number, reason: string): void {
    wtSessions.get(wt)?.closing();
    wt.close({ closeCode: code, reason });
  }

  return {
    port,
    http3: probe.ok,
    http3Reason: probe.reason,
    async close() {
      for (const wt of [...wtSessions.keys()]) closeSession(wt, closeCodes.GOING_AWAY, SHUTDOWN_REASON);
      for (const server of servers) server.stopServer();
    },
  };
}
