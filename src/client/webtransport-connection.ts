import {
  codecs,
  decodeEnvelope,
  encodeFrame,
  FrameDecoder,
  envelopes,
  isServerShutdown,
  pinnedCertificate,
  RpcError,
  type Codec,
  type CodecName,
  type Envelope,
  type WebTransportCarrier,
} from '../protocol/index.js';
import { nextTurn } from '../flow/index.js';
import type { OpenedSession, OpenOptions, WtCarrierChoice, WtSession } from '../webtransport/index.js';
import type { CallChannel, CallSink, ClientConnection } from './connection.js';
import { SharedCallStream } from './shared-call-stream.js';
import { redact } from './websocket-connection.js';

export interface WebTransportConnectOptions {
  readonly codec?: CodecName;
  /** SHA-256 (hex) of the server's self-signed certificate. */
  readonly certHash?: string;
  readonly connectTimeoutMs?: number;
  /** HTTP/3, HTTP/2, or `auto` (HTTP/3 where this process can speak it, falling back to HTTP/2). */
  readonly transport?: WtCarrierChoice;
  readonly signal?: AbortSignal;
  /**
   * Whether calls share one stream of the session (spec §5.4, WTS-1) rather than each
   * opening its own (WT-1). Default true: a stream per call costs each end a stream,
   * its web streams and a frame decoder per call, which bounds unary calls; a call's
   * credit keeps a large stream from filling the shared one (§4.8). A callee that
   * refuses sharing gets a stream per call.
   */
  readonly sharedStream?: boolean;
}

/**
 * Opens a session on this platform: the browser's own WebTransport, or in Node the
 * library's over HTTP/2 and Deno's over HTTP/3 (client-node).
 */
export type OpenSession = (url: string, options: OpenOptions) => Promise<Pick<OpenedSession, 'session' | 'carrier'>>;

/** The browser's own WebTransport (HTTP/3), the certificate pinned by its hash. */
export const openBrowserWebTransport: OpenSession = async (url, options) => {
  const Native = (globalThis as { WebTransport?: new (url: string, init: Record<string, unknown>) => WtSession }).WebTransport;
  if (!Native) throw new Error('this platform has no WebTransport');
  const init = options.certHash ? { serverCertificateHashes: [pinnedCertificate(options.certHash)] } : {};
  const session = new Native(url, init);
  session.closed.catch(() => undefined);
  return { session, carrier: 'http/3' };
};

/**
 * WebTransport (HTTP/2 here, HTTP/3 where available): calls on one shared stream, or
 * one bidirectional stream per call where the callee refuses sharing; length-prefixed
 * frames (spec/PROTOCOL.md §5.4). Authentication rides in each call's `auth_token`.
 */
export async function connectWebTransport(
  url: string,
  options: WebTransportConnectOptions,
  openSession: OpenSession,
): Promise<ClientConnection & { readonly headerAuth: boolean }> {
  const target = new URL(url);
  if (target.pathname === '/callwire' && options.codec === 'json') target.pathname = '/callwire/json';
  const codec: Codec = target.pathname.endsWith('/json') ? codecs.json : codecs.msgpack;
  let wt: WtSession;
  let carrier: WebTransportCarrier;
  try {
    ({ session: wt, carrier } = await openSession(target.toString(), { certHash: options.certHash, transport: options.transport }));
  } catch (error) {
    throw connectFailure(url, error, options.certHash);
  }
  const timeoutMs = options.connectTimeoutMs ?? 10_000;
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    await Promise.race([
      wt.ready,
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no session within ${timeoutMs} ms`)), timeoutMs);
        if (options.signal?.aborted) reject(new RpcError('CANCELLED', 'cancelled while connecting'));
        options.signal?.addEventListener('abort', () => reject(new RpcError('CANCELLED', 'cancelled while connecting')), { once: true });
      }),
    ]);
  } catch (error) {
    wt.close();
    if (error instanceof RpcError) throw error;
    throw connectFailure(url, error, options.certHash);
  } finally {
    clearTimeout(timer);
  }

  const sinks = new Set<CallSink>();
  let open = true;
  /** Set when the server closed the session saying it is going away (spec §4.9). */
  let shutdown: RpcError | undefined;
  const closed = wt.closed
    .catch(() => undefined)
    .then((info) => {
      open = false;
      // The server going away ends its calls with it: waiting out a resume grace against it would only delay the failure.
      if (info && isServerShutdown(info.closeCode ?? 0, info.reason ?? '')) {
        shutdown = new RpcError('UNAVAILABLE', `the server at ${redact(url)} is shutting down (it closed the session with ${info.closeCode} ${info.reason})`);
      }
      for (const sink of [...sinks]) sessionEnded(sink);
      sinks.clear();
    });
  /** Tells `sink` how the session ended: the server shutting down, or a lost connection its call may outlive. */
  const sessionEnded = (sink: CallSink): void => sink.lost(shutdown ?? new RpcError('UNAVAILABLE', 'connection closed'), shutdown !== undefined);
  /**
   * A call stream's failure, told a turn later: a session's close errors its streams just
   * before it settles `closed`, and a stream that ended with its session ends as the session did.
   */
  const streamLost = (sink: CallSink, error: RpcError): void =>
    nextTurn(() => (shutdown ? sink.lost(shutdown, true) : sink.lost(error)));
  /** `sink`, its losses told as `streamLost` tells them. */
  const onStream = (sink: CallSink): CallSink => ({ frame: (envelope, bytes) => sink.frame(envelope, bytes), lost: (error) => streamLost(sink, error) });

  // WTS-1: one shared stream per session, asked for once; a refusal is for the whole session.
  let sharingRefused = options.sharedStream === false;
  let sharedReady: SharedCallStream | undefined;
  let sharedAsked: Promise<SharedCallStream | undefined> | undefined;
  const sharedStream = (): Promise<SharedCallStream | undefined> =>
    (sharedAsked ??= SharedCallStream.open(wt, codec, () => {
      sharedReady = undefined;
      sharedAsked = undefined;
    }).then(
      (shared) => {
        if (shared) sharedReady = shared;
        else sharingRefused = true;
        return shared;
      },
      () => {
        sharingRefused = true;
        return undefined;
      },
    ));

  function streamPerCall(request: Envelope, sink: CallSink): CallChannel {
    if (!open) {
      // The session ended while the call waited for the callee's answer about a shared stream (WTS-2):
      // `closed` told the calls it knew of, not this one, which hears it now.
      nextTurn(() => sessionEnded(sink));
      return { abort: () => undefined, done: () => undefined, send: (envelope) => codec.encode(envelope).byteLength };
    }
    let delivering = true;
    let writer: WritableStreamDefaultWriter<Uint8Array> | undefined;
    let finished = false;
    const write = (bytes: Uint8Array): void => {
      writer?.write(bytes).catch(() => undefined);
    };
    const finish = (): void => {
      if (finished) return;
      finished = true;
      sinks.delete(sink);
      writer?.close().catch(() => undefined); // FIN: the stream's slot is freed
    };
    sinks.add(sink);
    void (async () => {
      // Past the stream limit, wait for a slot rather than fail the call.
      const stream = await wt.createBidirectionalStream({ waitUntilAvailable: true });
      writer = stream.writable.getWriter();
      if (finished) {
        // Aborted before the stream existed: nothing was sent, nothing to cancel.
        await writer.close().catch(() => undefined);
        return;
      }
      write(encodeFrame(codec.encode(request)));
      const reader = stream.readable.getReader();
      const decoder = new FrameDecoder();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        for (const body of decoder.push(value)) {
          const parsed = decodeEnvelope(codec, body);
          if (parsed.kind === 'event' && delivering) sink.frame(parsed.envelope, body.byteLength);
        }
      }
      if (delivering && !finished) throw new RpcError('UNAVAILABLE', 'the server closed the call stream before its terminal event');
    })().catch((error: unknown) => {
      // A stream that ended with its session: the session's end tells the call (`closed` above).
      if (delivering && !finished && open) streamLost(sink, error instanceof RpcError ? error : new RpcError('UNAVAILABLE', `call stream failed: ${String(error)}`));
      finish();
    });
    return {
      abort() {
        if (!delivering) return;
        delivering = false;
        if (writer) write(encodeFrame(codec.encode(envelopes.aborted(request.id))));
        finish();
      },
      done() {
        delivering = false;
        finish();
      },
      send(envelope) {
        // Input follows the callee's first credit, which came on this stream: the writer exists.
        const body = codec.encode(envelope);
        if (delivering && writer) write(encodeFrame(body));
        return body.byteLength;
      },
    };
  }

  return {
    codec,
    carrier,
    headerAuth: false,
    closed,
    startCall(request, sink) {
      if (sharedReady?.alive) return sharedReady.startCall(request, onStream(sink));
      if (sharingRefused) return streamPerCall(request, sink);
      // The first call (or the first after a shared stream ended) waits for the callee's answer (WTS-2).
      let chosen: CallChannel | undefined;
      let dropped = false;
      void sharedStream().then((shared) => {
        if (dropped) return;
        chosen = shared?.alive ? shared.startCall(request, onStream(sink)) : streamPerCall(request, sink);
      });
      return {
        abort() {
          if (chosen) return chosen.abort();
          dropped = true; // nothing was sent yet
        },
        done() {
          if (chosen) return chosen.done();
          dropped = true;
        },
        send(envelope) {
          // Input follows the callee's first credit, which came on the call's stream: it was chosen.
          return chosen ? chosen.send(envelope) : codec.encode(envelope).byteLength;
        },
      };
    },
    forget(id) {
      // A call on a stream of its own had that stream closed at its end: its callee forgets it after its grace.
      if (sharedReady?.alive) sharedReady.forget(id);
    },
    async close() {
      if (open) wt.close({ closeCode: 0, reason: 'client closed' });
      await closed;
    },
  };
}

/**
 * Why a session did not open. A TLS handshake refused without a pinned hash is almost
 * always a self-signed server (callwire serve without --cert): say what to pass, and where
 * the server prints it, rather than the carrier's bare "Opening handshake failed."
 */
function connectFailure(url: string, error: unknown, certHash: string | undefined): RpcError {
  const message = error instanceof Error ? error.message : String(error);
  const untrusted = certHash === undefined && /handshake failed|certificate|UnknownIssuer/i.test(message);
  const hint = untrusted
    ? ". The server's certificate is not trusted here: a server with a self-signed certificate is reached with --cert-hash <sha256> (the SDK's certHash), from the 'certificate sha256' line its banner prints"
    : '';
  return new RpcError('UNAVAILABLE', `could not connect to ${redact(url)}: ${untrusted ? message.replace(/\.$/, '') : message}${hint}`);
}
