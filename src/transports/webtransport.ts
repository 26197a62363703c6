import type { Http2SecureServer, Http2Session } from 'node:http2';
import { randomBytes } from 'node:crypto';
import { Session, type Identity, type Logger, type Registry, type SessionLimits, type SessionTransport } from '../dispatcher/index.js';
import {
  codecs,
  decodeEnvelope,
  encodeFrame,
  frames,
  FrameDecoder,
  limits,
  ProtocolError,
  RpcError,
  webTransportWindows,
  type Codec,
} from '../protocol/index.js';
import type { Authenticate } from './auth.js';
import { startHttp2Keepalive } from './keepalive.js';
import { checkBrowserRequest, type OriginPolicy } from './origin.js';

export interface WebTransportServerOptions {
  readonly registry: Registry;
  readonly host: string;
  /** 0 picks a free port. */
  readonly port: number;
  readonly certPem: string;
  readonly keyPem: string;
  /** WebTransport has no upgrade header here: callers authenticate per call (`auth_token`). */
  readonly authenticate?: Authenticate;
  /** Identity of callers without a token; default anonymous (`null`). */
  readonly anonymousIdentity?: Identity | null;
  readonly limits?: Partial<SessionLimits> & { maxFrameBytes?: number };
  readonly logger?: Logger;
  /** Which browser pages may open a session (§10.1); by default none. */
  readonly originPolicy?: OriginPolicy;
  /** HTTP/2 PING interval; a connection that leaves one unanswered for an interval is dropped (§5.5). 0: off. */
  readonly keepaliveMs?: number;
}

export interface WebTransportListener {
  readonly port: number;
  /** Whether HTTP/3 (QUIC) is served too; false when the native transport is missing. */
  readonly http3: boolean;
  readonly http3Reason: string;
  readonly sessions: ReadonlySet<Session>;
  close(graceMs?: number): Promise<void>;
}

// spec/PROTOCOL.md §5.4: the session path picks the codec.
const PATHS: Readonly<Record<string, Codec>> = {
  '/callwire': codecs.msgpack,
  '/callwire/msgpack': codecs.msgpack,
  '/callwire/json': codecs.json,
};

interface WtStream {
  readable: ReadableStream<Uint8Array>;
  writable: WritableStream<Uint8Array>;
}
interface WtSession {
  ready: Promise<void>;
  closed: Promise<unknown>;
  incomingBidirectionalStreams: ReadableStream<WtStream>;
  close(info?: { closeCode?: number; reason?: string }): void;
}
interface WtServer {
  setRequestCallback(callback: (request: { header: Record<string, string | undefined> }) => Promise<SessionAnswer>): void;
  startServer(): void;
  stopServer(): void;
  ready: Promise<void>;
  port: number | null;
  sessionStream(path: string): ReadableStream<WtSession>;
}

type SessionAnswer = { status: 200; path: string; userData: Record<string, never> } | { status: number };

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

/** Serves the protocol over WebTransport: one bidirectional stream per call (spec §5.4). */
export async function listenWebTransport(options: WebTransportServerOptions): Promise<WebTransportListener> {
  const lib = (await import('@fails-components/webtransport')) as unknown as {
    Http2Server: new (args: Record<string, unknown>) => WtServer;
    Http3Server: new (args: Record<string, unknown>) => WtServer;
  };
  const args = {
    port: options.port,
    host: options.host,
    secret: randomBytes(32).toString('hex'),
    cert: options.certPem,
    privKey: options.keyPem,
    ...webTransportWindows,
  };
  // Every session request passes the origin and host rules before it is accepted (§10.1).
  const answer = async ({ header }: { header: Record<string, string | undefined> }): Promise<SessionAnswer> => {
    const path = header[':path'] ?? '';
    if (!(path in PATHS)) return { status: 404 };
    const verdict = checkBrowserRequest(options.originPolicy ?? { allowOrigins: [], allowHosts: [], checkHost: false }, header['origin'], header[':authority'] ?? header['host']);
    if (verdict.ok) return { status: 200, path, userData: {} };
    options.logger?.warn('refused a WebTransport session', { reason: verdict.reason });
    return { status: verdict.status };
  };
  const http2 = new lib.Http2Server(args);
  http2.setRequestCallback(answer);
  http2.startServer();
  await http2.ready;
  // The library keeps its node:http2 server inside; PINGs are the HTTP/2 keepalive.
  const h2 = (http2 as unknown as { transportInt?: { serverInt?: Http2SecureServer } }).transportInt?.serverInt;
  h2?.on('session', (session: Http2Session) =>
    startHttp2Keepalive(session, options.keepaliveMs ?? limits.keepaliveMs, () => options.logger?.info('closing a silent WebTransport connection', { after: 'keepalive' })),
  );
  const port = http2.port ?? options.port;
  const servers: WtServer[] = [http2];
  const probe = await probeHttp3();
  if (probe.ok) {
    const http3 = new lib.Http3Server({ ...args, port });
    http3.setRequestCallback(answer);
    http3.startServer();
    await http3.ready;
    servers.push(http3);
  }

  const sessions = new Set<Session>();
  const wtSessions = new Set<WtSession>();
  let closing = false;
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
      if (closing) {
        next.value.close({ closeCode: 1001, reason: 'server shutting down' });
        continue;
      }
      void serveSession(next.value, codec).catch((error: unknown) => options.logger?.debug('webtransport session failed', { error: String(error) }));
    }
  }

  async function serveSession(wt: WtSession, codec: Codec): Promise<void> {
    await wt.ready;
    wtSessions.add(wt);
    const writers = new Map<string, WritableStreamDefaultWriter<Uint8Array>>();
    const maxFrameBytes = options.limits?.maxFrameBytes ?? limits.maxFrameBytes;
    const transport: SessionTransport = {
      codec,
      async send(callId, frame, final) {
        const writer = writers.get(callId);
        if (!writer) return; // the call's stream is already gone
        if (final) writers.delete(callId);
        await writer.write(encodeFrame(frame, maxFrameBytes));
        if (final) await writer.close(); // WT-2: the stream ends with the call
      },
      close: (code, reason) => wt.close({ closeCode: code, reason }),
    };
    const session = new Session({
      registry: options.registry,
      transport,
      identity: options.anonymousIdentity ?? null,
      ...(options.authenticate ? { authenticate: options.authenticate } : {}),
      ...(options.limits ? { limits: options.limits } : {}),
      ...(options.logger ? { logger: options.logger } : {}),
    });
    sessions.add(session);
    void wt.closed
      .catch(() => undefined)
      .then(() => {
        sessions.delete(session);
        wtSessions.delete(wt);
        session.close(); // ABT-4
      });

    const streams = wt.incomingBidirectionalStreams.getReader();
    for (;;) {
      const next = await streams.read().catch(() => ({ done: true as const, value: undefined }));
      if (next.done) return;
      void serveStream(next.value, session, codec, writers, maxFrameBytes);
    }
  }

  async function serveStream(
    stream: WtStream,
    session: Session,
    codec: Codec,
    writers: Map<string, WritableStreamDefaultWriter<Uint8Array>>,
    maxFrameBytes: number,
  ): Promise<void> {
    const reader = stream.readable.getReader();
    const writer = stream.writable.getWriter();
    const decoder = new FrameDecoder(maxFrameBytes);
    let callId: string | undefined;
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) {
          decoder.end();
          break;
        }
        for (const body of decoder.push(value)) {
          if (callId === undefined) {
            callId = firstFrameId(codec, body);
            // ID-3: an id whose call the session has ended (an abort included) is free again.
            if (writers.has(callId) && session.isLive(callId)) {
              // Another stream owns this live id: answer here, leave that one alone (ID-2).
              const error = RpcError.of('DUPLICATE_CALL_ID', 'call id is already live in this session');
              await writer.write(encodeFrame(codec.encode(frames.error(callId, error.toPayload()))));
              await writer.close();
              callId = undefined;
              return;
            }
            writers.set(callId, writer);
          } else if (unreadable(codec, body)) {
            // ENV-5 on WebTransport: the stream is reset; the session and its other calls live on.
            throw new ProtocolError('UNDECODABLE', 'a frame on this stream has no readable id');
          }
          session.receive(body);
        }
      }
    } catch (error) {
      // ENV-5 and §5.1: a bad frame or a reset stream ends this stream, not the session.
      options.logger?.debug('webtransport stream ended', { error: error instanceof ProtocolError ? error.message : String(error) });
      await writer.abort(error).catch(() => undefined);
    } finally {
      // WT-2: the caller's side ended before the call did: that is an abort.
      if (callId !== undefined && writers.get(callId) === writer) {
        writers.delete(callId);
        session.abortCall(callId);
        await writer.close().catch(() => undefined);
      }
    }
  }

  return {
    port,
    http3: probe.ok,
    http3Reason: probe.reason,
    sessions,
    async close(graceMs = 0) {
      closing = true;
      await Promise.all([...sessions].map((s) => s.shutdown(graceMs)));
      for (const wt of wtSessions) wt.close({ closeCode: 1001, reason: 'server shutting down' });
      for (const server of servers) server.stopServer();
    },
  };
}

/** A frame the session could not answer, because it carries no id to answer. */
function unreadable(codec: Codec, body: Uint8Array): boolean {
  const parsed = decodeEnvelope(codec, body);
  return parsed.kind === 'invalid' && parsed.error.callId === undefined;
}

/** The first frame on a stream must be the call's request (WT-1). */
function firstFrameId(codec: Codec, body: Uint8Array): string {
  const value = codec.decode(body) as { type?: unknown; id?: unknown } | null;
  if (typeof value !== 'object' || value === null || value.type !== 'call.requested' || typeof value.id !== 'string' || value.id === '') {
    throw new ProtocolError('INVALID_ENVELOPE', 'the first frame on a stream must be a call.requested with an id');
  }
  return value.id;
}
