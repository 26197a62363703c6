import { codecs, decodeEnvelope, envelopes, isServerShutdown, RpcError, subprotocols, type Codec, type CodecName, type Envelope } from '../protocol/index.js';
import type { CallChannel, CallSink, ClientConnection } from './connection.js';

/** The WebSocket a platform has: a browser's own, or in Node the `ws` package's. */
export interface SocketLike {
  binaryType: string;
  readonly protocol: string;
  readonly readyState: number;
  send(data: Uint8Array): void;
  close(code?: number, reason?: string): void;
  addEventListener(type: 'open' | 'close' | 'error' | 'message', listener: (event: never) => void): void;
  /** The `ws` package's (Node); a browser's WebSocket has neither. */
  ping?(): void;
  terminate?(): void;
  on?(type: 'pong', listener: () => void): void;
}

export type SocketConstructor = new (url: string, protocols: string[], options?: { headers?: Record<string, string>; ca?: string }) => SocketLike;

export interface WebSocketConnectOptions {
  readonly codec?: CodecName;
  /** Sent as `Authorization: Bearer` where the platform allows headers (Node). */
  readonly token?: string;
  readonly connectTimeoutMs?: number;
  /** Node only: PEM certificate(s) to trust for wss:// (a private CA, or the server's own self-signed one). */
  readonly ca?: string;
  readonly signal?: AbortSignal;
}

/**
 * What a platform's WebSocket brings: a browser's has no headers and writes as it does;
 * Node's (client-node) sends headers, batches a turn's frames into one write and watches
 * for a silent network.
 */
export interface WebSocketPlatform {
  readonly Socket: SocketConstructor;
  /** Whether the upgrade carries headers (the token, a CA). */
  readonly headers: boolean;
  readonly binaryType: 'arraybuffer' | 'nodebuffer';
  /** How an open socket's frames leave: undefined, one `send` each. */
  writer?(socket: SocketLike): ((bytes: number, write: () => void) => void) | undefined;
  /** Starts watching an open socket; the returned function stops it when the socket closes. */
  watch?(socket: SocketLike): () => void;
}

/** The browser's own WebSocket, if this platform has one. */
export function browserWebSocket(): WebSocketPlatform {
  const Socket = (globalThis as { WebSocket?: SocketConstructor }).WebSocket;
  if (!Socket) throw new RpcError('UNAVAILABLE', 'this platform has no WebSocket');
  return { Socket, headers: false, binaryType: 'arraybuffer' };
}

/** One WebSocket, calls multiplexed by id (spec/PROTOCOL.md §5.2). */
export async function connectWebSocket(
  url: string,
  options: WebSocketConnectOptions,
  platform: WebSocketPlatform,
): Promise<ClientConnection & { readonly headerAuth: boolean }> {
  const codec: Codec = codecs[options.codec ?? 'msgpack'];
  const { Socket, headers } = platform;
  const init = headers
    ? { ...(options.token === undefined ? {} : { headers: { Authorization: `Bearer ${options.token}` } }), ...(options.ca ? { ca: options.ca } : {}) }
    : undefined;
  const socket = new Socket(url, [subprotocols[codec.name]], init);
  socket.binaryType = platform.binaryType;
  const sinks = new Map<string, CallSink>();
  let closedResolve: () => void = () => undefined;
  const closed = new Promise<void>((resolve) => (closedResolve = resolve));

  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      socket.close();
      reject(new RpcError('UNAVAILABLE', `could not connect to ${redact(url)} within ${options.connectTimeoutMs ?? 10_000} ms`));
    }, options.connectTimeoutMs ?? 10_000);
    const cancel = (): void => {
      clearTimeout(timer);
      socket.close();
      reject(new RpcError('CANCELLED', `cancelled while connecting to ${redact(url)}`));
    };
    if (options.signal?.aborted) return cancel();
    options.signal?.addEventListener('abort', cancel, { once: true });
    socket.addEventListener('open', () => {
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', cancel);
      resolve();
    });
    socket.addEventListener('error', (event: { message?: string }) => {
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', cancel);
      reject(upgradeError(url, event.message));
    });
  });

  socket.addEventListener('message', (event: { data: ArrayBuffer | Uint8Array | string }) => {
    if (typeof event.data === 'string') return socket.close(1002, 'text messages are not allowed');
    const parsed = decodeEnvelope(codec, event.data instanceof Uint8Array ? event.data : new Uint8Array(event.data));
    if (parsed.kind !== 'event') return; // unknown types are ignored (ENV-4)
    sinks.get(parsed.envelope.id)?.frame(parsed.envelope, event.data.byteLength); // dropped when aborted
  });
  const stopWatching = platform.watch?.(socket);
  socket.addEventListener('close', (event: { code: number; reason: string }) => {
    stopWatching?.();
    // The server going away ends its calls with it: waiting out a resume grace against it would only delay the failure.
    const shutdown = isServerShutdown(event.code, event.reason);
    const error = shutdown
      ? new RpcError('UNAVAILABLE', `the server at ${redact(url)} is shutting down (it closed the connection with ${event.code} ${event.reason})`)
      : new RpcError('UNAVAILABLE', `connection closed (${event.code}${event.reason ? `: ${event.reason}` : ''})`);
    for (const sink of [...sinks.values()]) sink.lost(error, shutdown);
    sinks.clear();
    closedResolve();
  });

  const batched = platform.writer?.(socket);
  const send = (envelope: Envelope): number => {
    const bytes = codec.encode(envelope);
    if (socket.readyState === 1) {
      if (batched) batched(bytes.byteLength, () => socket.send(bytes));
      else socket.send(bytes);
    }
    return bytes.byteLength;
  };

  return {
    codec,
    carrier: 'websocket',
    headerAuth: headers,
    closed,
    startCall(request, sink) {
      if (socket.readyState !== 1) {
        queueMicrotask(() => sink.lost(new RpcError('UNAVAILABLE', 'connection is closed')));
        return { abort: () => undefined, done: () => undefined, send: () => 0 };
      }
      sinks.set(request.id, sink);
      send(request);
      return new WebSocketCallChannel(request.id, sinks, send);
    },
    forget(id) {
      if (socket.readyState === 1) send(envelopes.aborted(id));
    },
    async close() {
      if (socket.readyState < 2) socket.close(1000, 'client closed');
      await closed;
    },
  };
}

/** One call's way out on its WebSocket: a class, not closures made for each call (why: HandedOn, stream-call.ts). */
class WebSocketCallChannel implements CallChannel {
  constructor(
    private readonly id: string,
    private readonly sinks: Map<string, CallSink>,
    private readonly write: (envelope: Envelope) => number,
  ) {}

  abort(): void {
    if (this.sinks.delete(this.id)) this.write(envelopes.aborted(this.id));
  }

  done(): void {
    this.sinks.delete(this.id);
  }

  send(envelope: Envelope): number {
    return this.sinks.has(this.id) ? this.write(envelope) : 0;
  }
}

/** URLs may carry credentials; never print them. */
export function redact(url: string): string {
  try {
    const u = new URL(url);
    u.username = '';
    u.password = '';
    u.search = '';
    return u.toString();
  } catch {
    return '(invalid url)';
  }
}

/**
 * Why the upgrade failed. A refusal of the caller's credentials (401) or origin
 * (403) is FORBIDDEN, not retryable: trying again cannot help (spec §10). Only
 * Node's `ws` reports the status; a browser learns nothing but "failed".
 */
function upgradeError(url: string, message: string | undefined): RpcError {
  const status = /Unexpected server response: (\d{3})/.exec(message ?? '')?.[1];
  if (status === '401') return new RpcError('FORBIDDEN', `the server refused the token (HTTP 401) at ${redact(url)}`);
  if (status === '403') return new RpcError('FORBIDDEN', `the server refused the connection (HTTP 403: origin or host not allowed) at ${redact(url)}`);
  // A wrong path is the caller's mistake, not an outage: retrying cannot help.
  if (status === '404') return new RpcError('INVALID_INPUT', `nothing serves WebSocket at ${redact(url)} (HTTP 404): callwire serves it at the path /callwire, as in ws://127.0.0.1:7070/callwire`);
  return new RpcError('UNAVAILABLE', `could not connect to ${redact(url)}: ${message ?? 'connection failed'}`);
}
