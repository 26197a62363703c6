import { writeBatcher, type Corkable } from '../io/index.js';
import { codecs, decodeEnvelope, envelopes, RpcError, subprotocols, type Codec, type CodecName, type Envelope } from '../protocol/index.js';
import type { CallChannel, CallSink, ClientConnection } from './connection.js';

interface SocketLike {
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

type SocketConstructor = new (url: string, protocols: string[], options?: { headers?: Record<string, string>; ca?: string }) => SocketLike;

export interface WebSocketConnectOptions {
  readonly codec?: CodecName;
  /** Sent as `Authorization: Bearer` where the platform allows headers (Node). */
  readonly token?: string;
  readonly connectTimeoutMs?: number;
  /** Node only: PEM certificate(s) to trust for wss:// (a private CA, or the server's own self-signed one). */
  readonly ca?: string;
  readonly signal?: AbortSignal;
  /**
   * Node only: ping the server this often and drop the connection when nothing came
   * back for a whole interval after a ping (a network that vanished without a word,
   * §5.5), so a reconnecting client notices in seconds, not when TCP gives up. 0: off.
   */
  readonly keepaliveMs?: number;
}

/**
 * Browsers have a global WebSocket and no headers; Node 20 has neither, so the `ws`
 * package is loaded only there (no Node-only import on the browser path).
 */
async function socketConstructor(): Promise<{ Socket: SocketConstructor; headers: boolean }> {
  const global = (globalThis as { WebSocket?: SocketConstructor }).WebSocket;
  if (typeof process === 'undefined' || !process.versions?.node) {
    if (!global) throw new RpcError('UNAVAILABLE', 'this platform has no WebSocket');
    return { Socket: global, headers: false };
  }
  const ws = await import('ws');
  return { Socket: ws.WebSocket as unknown as SocketConstructor, headers: true };
}

/** One WebSocket, calls multiplexed by id (spec/PROTOCOL.md §5.2). */
export async function connectWebSocket(url: string, options: WebSocketConnectOptions = {}): Promise<ClientConnection & { readonly headerAuth: boolean }> {
  const codec: Codec = codecs[options.codec ?? 'msgpack'];
  const { Socket, headers } = await socketConstructor();
  const init = headers
    ? { ...(options.token === undefined ? {} : { headers: { Authorization: `Bearer ${options.token}` } }), ...(options.ca ? { ca: options.ca } : {}) }
    : undefined;
  const socket = new Socket(url, [subprotocols[codec.name]], init);
  // Node's ws hands a message that fits one socket read as a view of it; 'arraybuffer' would copy it once more.
  socket.binaryType = headers ? 'nodebuffer' : 'arraybuffer';
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
  const stopKeepalive = keepalive(socket, options.keepaliveMs ?? 0);
  socket.addEventListener('close', (event: { code: number; reason: string }) => {
    stopKeepalive();
    const error = new RpcError('UNAVAILABLE', `connection closed (${event.code}${event.reason ? `: ${event.reason}` : ''})`);
    for (const sink of [...sinks.values()]) sink.lost(error);
    sinks.clear();
    closedResolve();
  });

  // In Node, frames sent in one turn of the event loop leave in one write (`_socket` is
  // the ws package's; a browser's WebSocket has none and writes as it does).
  const tcp = (socket as unknown as { _socket?: Corkable })._socket;
  const batched = tcp ? writeBatcher(tcp) : undefined;
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
      return {
        abort() {
          if (sinks.delete(request.id)) send(envelopes.aborted(request.id));
        },
        done() {
          sinks.delete(request.id);
        },
        send: (envelope) => (sinks.has(request.id) ? send(envelope) : 0),
      } satisfies CallChannel;
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

/** Pings `socket` every `intervalMs`; terminates it (a close without a frame, 1006) when nothing arrived since the last ping. */
function keepalive(socket: SocketLike, intervalMs: number): () => void {
  const { ping, terminate, on } = socket;
  if (intervalMs <= 0 || !ping || !terminate || !on) return () => undefined;
  let heard = true;
  on.call(socket, 'pong', () => (heard = true));
  socket.addEventListener('message', () => (heard = true));
  const timer = setInterval(() => {
    if (!heard) return terminate.call(socket);
    heard = false;
    ping.call(socket);
  }, intervalMs);
  (timer as { unref?: () => void }).unref?.();
  return () => clearInterval(timer);
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
  return new RpcError('UNAVAILABLE', `could not connect to ${redact(url)}: ${message ?? 'connection failed'}`);
}
