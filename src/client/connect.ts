import { RpcError, type CodecName } from '../protocol/index.js';
import type { WtCarrierChoice } from '../webtransport/index.js';
import { Client } from './client.js';
import type { ClientConnection } from './connection.js';
import { ResumingConnection } from './resuming-connection.js';
import { browserWebSocket, connectWebSocket, type WebSocketConnectOptions } from './websocket-connection.js';
import { connectWebTransport, openBrowserWebTransport, type WebTransportConnectOptions } from './webtransport-connection.js';

export interface ConnectOptions {
  /** Bearer token: an upgrade header where possible, otherwise `auth_token` per call. */
  readonly token?: string;
  readonly codec?: CodecName;
  /** SHA-256 of a self-signed server certificate (hex), for WebTransport. */
  readonly certHash?: string;
  /** Node only: PEM certificate(s) to trust for wss:// (a private CA or a self-signed server). */
  readonly ca?: string;
  readonly connectTimeoutMs?: number;
  /** Gives up connecting when it fires: the attempt is closed and connect rejects with CANCELLED. */
  readonly signal?: AbortSignal;
  /**
   * For https:// URLs: `h3` (WebTransport over HTTP/3, through the Deno client edge in
   * Node, the native API in a browser), `h2` (over HTTP/2; Node only), or `auto`, the
   * default: HTTP/3 where this process can speak it, with HTTP/2 started too if no
   * HTTP/3 session is ready within 300 ms; the first ready wins (docs/http3.md "Node client").
   */
  readonly transport?: WtCarrierChoice;
  /** For https:// URLs: calls share one stream of the session (spec §5.4, WTS-1); default true, false: a stream per call. */
  readonly sharedStream?: boolean;
  /**
   * Survive a lost connection (spec §4.9): dial again with backoff and jitter, and take
   * up every stream, which asks the server to keep it for `graceMs` (the server caps it).
   * Events: `client.on('reconnecting' | 'resumed', …)`.
   */
  readonly resume?: { readonly graceMs: number };
  /** WebSocket in Node: ping this often and drop a connection silent for a whole interval (default 5 s with `resume`, else off). */
  readonly keepaliveMs?: number;
}

type DialedConnection = ClientConnection & { readonly headerAuth: boolean };

/** How a platform opens each transport: the browser's own here, Node's in client-node. */
export interface Dialers {
  webSocket(url: string, options: WebSocketConnectOptions & { readonly keepaliveMs?: number }): Promise<DialedConnection>;
  webTransport(url: string, options: WebTransportConnectOptions): Promise<DialedConnection>;
}

/** The browser's: its own WebSocket (no headers) and its own WebTransport (HTTP/3). */
export const browserDialers: Dialers = {
  webSocket: (url, options) => connectWebSocket(url, options, browserWebSocket()),
  webTransport: (url, options) => connectWebTransport(url, options, openBrowserWebTransport),
};

/**
 * Connects to a callwire server. The URL picks the transport: `ws:`/`wss:` →
 * WebSocket, `ws+unix:` → WebSocket on the server's unix socket (Node), `https:` →
 * WebTransport (spec/PROTOCOL.md §5).
 */
export function connect(url: string, options: ConnectOptions = {}): Promise<Client> {
  return connectWith(browserDialers, url, options);
}

/** `connect` over a platform's dialers. */
export async function connectWith(dialers: Dialers, url: string, options: ConnectOptions = {}): Promise<Client> {
  const { resume, ...rest } = options;
  // A reconnecting client must notice a network that vanished without a word (§5.5).
  const once = resume ? { keepaliveMs: RESUME_KEEPALIVE_MS, ...rest } : rest;
  const first = await connectOnce(dialers, url, once);
  if (!resume) return new Client(first.connection, first.perCallToken);
  // The same URL and codec each time: a resumed call's frames are charged as before.
  const dial = async (): Promise<ClientConnection> =>
    (await connectOnce(dialers, url, { ...once, connectTimeoutMs: Math.min(options.connectTimeoutMs ?? 5000, 5000) })).connection;
  const connection = new ResumingConnection(first.connection, { dial });
  const client = new Client(connection, first.perCallToken, resume);
  connection.onEvent = (event) => client.emit(event);
  return client;
}

/** How often a resuming client pings, and how long a silent connection may stay before it dials again. */
const RESUME_KEEPALIVE_MS = 5000;

/** A connection, and the token to send with each call where the transport could not send a header. */
interface Connected {
  readonly connection: ClientConnection;
  readonly perCallToken: string | undefined;
}

async function connectOnce(dialers: Dialers, url: string, options: Omit<ConnectOptions, 'resume'>): Promise<Connected> {
  let protocol: string;
  try {
    protocol = new URL(url).protocol;
  } catch {
    throw new RpcError('INVALID_INPUT', notAUrl(url));
  }
  const common = {
    ...(options.codec ? { codec: options.codec } : {}),
    ...(options.token === undefined ? {} : { token: options.token }),
    ...(options.connectTimeoutMs === undefined ? {} : { connectTimeoutMs: options.connectTimeoutMs }),
    ...(options.signal ? { signal: options.signal } : {}),
  };
  // ws+unix:///path/to.sock:/callwire: the server's unix socket (serve --socket), Node only.
  if (protocol === 'ws:' || protocol === 'wss:' || protocol === 'ws+unix:') {
    const connection = await dialers.webSocket(url, { ...common, ...(options.ca ? { ca: options.ca } : {}), ...(options.keepaliveMs === undefined ? {} : { keepaliveMs: options.keepaliveMs }) });
    return { connection, perCallToken: connection.headerAuth ? undefined : options.token };
  }
  if (protocol === 'https:') {
    const connection = await dialers.webTransport(url, {
      ...common,
      ...(options.certHash ? { certHash: options.certHash } : {}),
      ...(options.transport ? { transport: options.transport } : {}),
      ...(options.sharedStream === undefined ? {} : { sharedStream: options.sharedStream }),
    });
    return { connection, perCallToken: connection.headerAuth ? undefined : options.token };
  }
  throw new RpcError('INVALID_INPUT', `unsupported URL scheme ${protocol}: use ws://, wss://, ws+unix:// or https://`);
}

/**
 * What is wrong with a string that does not parse as a URL, repeated as given (up to
 * 200 characters, without anything before an `@`, which may be credentials) with the
 * form that works: a bare `host:port` is the usual slip.
 */
export function notAUrl(input: string): string {
  const shown = input.slice(input.lastIndexOf('@') + 1, 200).trim();
  const hostPort = /^[\w.-]+:\d+$/.test(shown) ? shown : '127.0.0.1:7070';
  return `not a URL: '${shown}'. A server's URL starts with ws://, wss:// or https://, as in ws://${hostPort}/callwire`;
}
