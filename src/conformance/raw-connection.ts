import WebSocket from 'ws';
import { codecs, encodeFrame, FrameDecoder, subprotocols, type CodecName } from '../protocol/index.js';
import { openWebTransport, type WtCarrierChoice } from '../webtransport/index.js';
import { decodedEvent, EventQueue, idOf } from './events.js';
import { RawPeer } from './raw-peer.js';

export interface RawConnectOptions {
  readonly codec: CodecName;
  readonly token?: string | undefined;
  readonly certHash?: string | undefined;
  /** WebTransport only: the carrier (HTTP/3, HTTP/2, or auto). */
  readonly transport?: WtCarrierChoice | undefined;
  /** WebSocket only: subprotocols to offer instead of the codec's. */
  readonly subprotocols?: readonly string[];
  /** WebSocket only: never answer pings, as a peer that vanished would not (§5.5). */
  readonly silent?: boolean;
  /** WebSocket only: more upgrade request headers (an Origin, a Host). */
  readonly headers?: Record<string, string>;
}

/** Opens the one raw peer (raw-peer.ts) over a WebSocket (ws:, wss:) or WebTransport (https:). */
export async function rawConnect(url: string, options: RawConnectOptions): Promise<RawPeer> {
  const protocol = new URL(url).protocol;
  if (protocol === 'ws:' || protocol === 'wss:') return rawWebSocket(url, options);
  if (protocol === 'https:') return rawWebTransport(url, options);
  throw new Error(`unsupported URL scheme ${protocol}`);
}

/**
 * Opens a WebSocket and reports the handshake's outcome: the chosen protocol or the
 * HTTP status; rejects with the socket's error when there is neither.
 */
export function probeHandshake(
  url: string,
  offered: readonly string[],
  headers: Record<string, string> = {},
  tls: { readonly rejectUnauthorized?: boolean } = {},
): Promise<{ protocol?: string; status?: number }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, [...offered], { headers, ...tls });
    ws.once('open', () => {
      resolve({ protocol: ws.protocol });
      ws.close();
    });
    ws.once('unexpected-response', (_req, res) => {
      resolve({ status: res.statusCode ?? 0 });
      ws.terminate();
    });
    ws.once('error', reject);
  });
}

async function rawWebSocket(url: string, options: RawConnectOptions): Promise<RawPeer> {
  const codec = codecs[options.codec];
  const events = new EventQueue();
  const headers = { ...options.headers, ...(options.token ? { Authorization: `Bearer ${options.token}` } : {}) };
  const ws = new WebSocket(url, [...(options.subprotocols ?? [subprotocols[codec.name]])], { headers, perMessageDeflate: false, autoPong: options.silent !== true });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('unexpected-response', (_req, res) => reject(new Error(`WebSocket upgrade refused: HTTP ${res.statusCode}`)));
    ws.once('error', reject);
  });
  ws.on('message', (data: Buffer, isBinary) => {
    events.push(isBinary ? decodedEvent(codec, new Uint8Array(data)) : { kind: 'undecodable', error: 'text message from the server' });
  });
  ws.on('ping', () => events.push({ kind: 'ping' }));
  const closed = new Promise<void>((resolve) =>
    ws.once('close', (code, reason) => {
      events.push({ kind: 'close', code, reason: reason.toString() });
      resolve();
    }),
  );
  return new RawPeer({
    transport: 'websocket',
    carrier: 'websocket',
    resets: true,
    protocol: ws.protocol,
    codec,
    events,
    sendValue: (value) => ws.send(codec.encode(value), { binary: true }),
    sendBytes: (bytes) => ws.send(bytes, { binary: true }),
    sendText: (text) => ws.send(text, { binary: false }),
    pause(ms) {
      ws.pause();
      if (ms !== undefined) setTimeout(() => ws.resume(), ms);
    },
    resume: () => ws.resume(),
    finish() {
      throw new Error('finish applies to WebTransport streams');
    },
    reset() {
      throw new Error('reset applies to WebTransport streams');
    },
    async close() {
      if (ws.readyState === ws.OPEN || ws.readyState === ws.CONNECTING) ws.close(1000);
      await Promise.race([closed, new Promise((resolve) => setTimeout(resolve, 2000))]);
    },
    async drop() {
      ws.terminate();
      await Promise.race([closed, new Promise((resolve) => setTimeout(resolve, 2000))]);
    },
  });
}

async function rawWebTransport(url: string, options: RawConnectOptions): Promise<RawPeer> {
  const codec = codecs[options.codec];
  const target = new URL(url);
  if (target.pathname === '/callwire') target.pathname = `/callwire/${codec.name}`;
  const { session: wt, carrier, resets } = await openWebTransport(target.toString(), { certHash: options.certHash, transport: options.transport });
  const events = new EventQueue();
  const closed = wt.closed.then(
    (info) => events.push({ kind: 'close', code: info?.closeCode ?? 0, reason: info?.reason ?? '' }),
    (error: unknown) => events.push({ kind: 'close', code: 0, reason: String(error) }),
  );
  await wt.ready;
  // §5.4: one stream per call; a frame's id picks its stream.
  const streams = new Map<string, Promise<WritableStreamDefaultWriter<Uint8Array>>>();
  let paused: Promise<void> = Promise.resolve();
  let resume = (): void => undefined;

  const open = (id: string | undefined): Promise<WritableStreamDefaultWriter<Uint8Array>> => {
    const existing = id === undefined ? undefined : streams.get(id);
    if (existing) return existing;
    const writer = wt.createBidirectionalStream({ waitUntilAvailable: true }).then((stream) => {
      void read(stream.readable, id);
      return stream.writable.getWriter();
    });
    if (id !== undefined) streams.set(id, writer);
    return writer;
  };
  const read = async (readable: ReadableStream<Uint8Array>, id: string | undefined): Promise<void> => {
    const reader = readable.getReader();
    const decoder = new FrameDecoder();
    let terminal = false;
    try {
      for (;;) {
        await paused;
        const { value, done } = await reader.read();
        if (done) {
          if (id !== undefined) ended.add(id);
          events.push({ kind: 'stream-end', id, early: !terminal });
          return;
        }
        for (const body of decoder.push(value)) {
          try {
            const decoded = codec.decode(body);
            const type = (decoded as { type?: unknown } | null)?.type;
            if (type === 'call.completed' || type === 'call.error') terminal = true;
            events.push({ kind: 'frame', value: decoded, id: idOf(decoded) ?? id });
          } catch (error) {
            events.push({ kind: 'undecodable', error: String(error) });
          }
        }
      }
    } catch {
      if (id !== undefined) ended.add(id);
      events.push({ kind: 'stream-reset', id });
    }
  };
  const write = (id: string | undefined, bytes: Uint8Array, fresh = false): void => {
    void (fresh ? openFresh(id) : open(id)).then((w) => w.write(bytes)).catch(() => events.push({ kind: 'stream-reset', id }));
  };
  // A request always starts a stream of its own (WT-1). It becomes the id's stream
  // unless that id's earlier stream is still open (a duplicate id).
  const ended = new Set<string>();
  const openFresh = (id: string | undefined): Promise<WritableStreamDefaultWriter<Uint8Array>> => {
    const live = id !== undefined && streams.has(id) && !ended.has(id);
    if (id !== undefined && !live) {
      streams.delete(id);
      ended.delete(id);
      return open(id);
    }
    return wt.createBidirectionalStream({ waitUntilAvailable: true }).then((stream) => {
      void read(stream.readable, id);
      return stream.writable.getWriter();
    });
  };
  // WebTransport has no upgrade header: a token rides in each request (spec §10).
  const withToken = (value: unknown): unknown => {
    const frame = value as { type?: unknown; payload?: Record<string, unknown> } | null;
    if (!options.token || frame?.type !== 'call.requested' || typeof frame.payload !== 'object' || frame.payload === null || 'auth_token' in frame.payload) return value;
    return { ...frame, payload: { ...frame.payload, auth_token: options.token } };
  };
  return new RawPeer({
    transport: 'webtransport',
    carrier,
    resets,
    codec,
    events,
    sendValue: (value, streamOf) => {
      const isRequest = (value as { type?: unknown } | null)?.type === 'call.requested';
      if (streamOf !== undefined) return write(streamOf, encodeFrame(codec.encode(withToken(value))));
      write(idOf(value), encodeFrame(codec.encode(withToken(value))), isRequest);
    },
    sendBytes: (bytes, id) => write(id, bytes),
    sendText: () => {
      throw new Error('text messages exist only on WebSocket');
    },
    pause(ms) {
      paused = new Promise((resolve) => {
        resume = () => resolve();
        if (ms !== undefined) setTimeout(resolve, ms);
      });
    },
    resume: () => resume(),
    finish(id) {
      void streams.get(id)?.then((w) => w.close()).catch(() => undefined);
    },
    reset(id) {
      void streams.get(id)?.then((w) => w.abort(new Error('reset by the conformance runner'))).catch(() => undefined);
    },
    async close() {
      wt.close({ closeCode: 0, reason: 'done' });
      await Promise.race([closed, new Promise((resolve) => setTimeout(resolve, 2000))]);
    },
  });
}
