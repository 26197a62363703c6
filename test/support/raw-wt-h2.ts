import { connect as http2Connect, constants, type ClientHttp2Session, type ClientHttp2Stream } from 'node:http2';
import { codecs, decodeEnvelope, encodeFrame, FrameDecoder, type Envelope } from '../../src/protocol/index.js';

// A hostile WebTransport-over-HTTP/2 peer (draft-ietf-webtrans-http2): the extended CONNECT
// a browser sends, then capsules written by hand on its stream, right or wrong. The
// library's client would refuse to send most of what the tests need.

/** Capsule types of the draft, as the server's library numbers them. */
export const CAPSULE = {
  datagram: 0x00,
  padding: 0x190b4d38,
  resetStream: 0x190b4d39,
  stopSending: 0x190b4d3a,
  stream: 0x190b4d3b,
  streamFin: 0x190b4d3c,
  maxData: 0x190b4d3d,
  maxStreamData: 0x190b4d3e,
  maxStreamsBidi: 0x190b4d3f,
  maxStreamsUni: 0x190b4d40,
  dataBlocked: 0x190b4d41,
  streamDataBlocked: 0x190b4d42,
  streamsBlockedUni: 0x190b4d43,
  streamsBlockedBidi: 0x190b4d44,
  closeSession: 0x2843,
  drainSession: 0x78ae,
} as const;

/** A QUIC variable-length integer (RFC 9000 §16). */
export function varint(value: number | bigint): Buffer {
  const v = BigInt(value);
  if (v < 64n) return Buffer.from([Number(v)]);
  if (v < 16384n) return Buffer.from([0x40 | Number(v >> 8n), Number(v & 0xffn)]);
  if (v < 1073741824n) {
    const out = Buffer.alloc(4);
    out.writeUInt32BE((Number(v) | 0x80000000) >>> 0);
    return out;
  }
  const out = Buffer.alloc(8);
  out.writeBigUInt64BE(v | (0xc0n << 56n));
  return out;
}

/** type | length | payload; `length` may lie. */
export function capsule(type: number, payload: Uint8Array = new Uint8Array(0), length: number | bigint = payload.byteLength): Buffer {
  return Buffer.concat([varint(type), varint(length), payload]);
}

/** A WT_STREAM capsule: data of stream `id`, with its FIN when `fin`. */
export function streamCapsule(id: number | bigint, data: Uint8Array = new Uint8Array(0), fin = false): Buffer {
  return capsule(fin ? CAPSULE.streamFin : CAPSULE.stream, Buffer.concat([varint(id), data]));
}

/** A call's request as a stream's bytes (msgpack, framed). */
export function requestBytes(envelope: Envelope): Uint8Array {
  return encodeFrame(codecs.msgpack.encode(envelope));
}

/** How the server ended the session: its CLOSE_WEBTRANSPORT_SESSION capsule, and its stream's end. */
export interface SessionEnd {
  readonly closeCode: number | undefined;
  readonly reason: string | undefined;
  readonly rstCode: number;
}

/** One session opened by hand: capsules in, capsules out, and the envelopes of each stream. */
export class RawWtH2Peer {
  /** The callwire envelopes the server sent, by WebTransport stream id. */
  readonly envelopes = new Map<bigint, Envelope[]>();
  /** Streams the server finished (WT_STREAM with FIN) or reset. */
  readonly fins = new Set<bigint>();
  readonly resets = new Set<bigint>();
  closeCapsule: { code: number; reason: string } | undefined;
  /** Settles when the session's stream closes, however. */
  readonly ended: Promise<SessionEnd>;
  private held: Buffer = Buffer.alloc(0);
  private readonly decoders = new Map<bigint, FrameDecoder>();

  private constructor(
    readonly connection: ClientHttp2Session,
    readonly stream: ClientHttp2Stream,
  ) {
    stream.on('data', (chunk: Buffer) => this.receive(chunk));
    this.ended = new Promise((resolve) => stream.once('close', () => resolve({ closeCode: this.closeCapsule?.code, reason: this.closeCapsule?.reason, rstCode: stream.rstCode ?? 0 })));
    stream.on('error', () => undefined);
    connection.on('error', () => undefined);
  }

  /** Opens a session at `url` (https://host:port) on `path`; rejects unless the server answers 200. */
  static async open(url: string, path = '/callwire/msgpack'): Promise<RawWtH2Peer> {
    const connection = http2Connect(new URL(url).origin, { rejectUnauthorized: false });
    connection.on('error', () => undefined);
    await new Promise<void>((resolve, reject) => {
      connection.once('remoteSettings', () => resolve());
      connection.once('error', reject);
    });
    const stream = connection.request(
      { [constants.HTTP2_HEADER_METHOD]: 'CONNECT', ':protocol': 'webtransport', [constants.HTTP2_HEADER_SCHEME]: 'https', [constants.HTTP2_HEADER_PATH]: path },
      { endStream: false },
    );
    const status = await new Promise<number>((resolve, reject) => {
      stream.once('response', (headers) => resolve(Number(headers[constants.HTTP2_HEADER_STATUS])));
      stream.once('error', reject);
    });
    if (status !== 200) {
      connection.destroy();
      throw new Error(`WebTransport session refused: HTTP ${status}`);
    }
    return new RawWtH2Peer(connection, stream);
  }

  /** Writes bytes on the session's stream; resolves once they are handed to the socket (or the stream is gone). */
  send(bytes: Uint8Array): Promise<void> {
    if (this.stream.destroyed || this.stream.writableEnded) return Promise.resolve();
    return new Promise((resolve) => this.stream.write(bytes, () => resolve()));
  }

  /** Whether the session is over: the server closed it, or its stream is gone. */
  get isEnded(): boolean {
    return this.closeCapsule !== undefined || this.stream.closed || this.stream.destroyed;
  }

  /** Envelopes of stream `id` so far. */
  on(id: number | bigint): Envelope[] {
    return this.envelopes.get(BigInt(id)) ?? [];
  }

  close(): void {
    this.connection.destroy();
  }

  private receive(chunk: Buffer): void {
    this.held = this.held.byteLength === 0 ? chunk : Buffer.concat([this.held, chunk]);
    for (;;) {
      const at = { offset: 0 };
      const type = readVarint(this.held, at);
      const length = readVarint(this.held, at);
      if (type === undefined || length === undefined || this.held.byteLength < at.offset + Number(length)) return;
      const payload = this.held.subarray(at.offset, at.offset + Number(length));
      this.held = this.held.subarray(at.offset + Number(length));
      this.capsule(Number(type), payload);
    }
  }

  private capsule(type: number, payload: Buffer): void {
    if (type === CAPSULE.closeSession && payload.byteLength >= 4) {
      this.closeCapsule = { code: payload.readUInt32BE(0), reason: payload.subarray(4).toString('utf8') };
      return;
    }
    if (type === CAPSULE.resetStream) {
      const id = readVarint(payload, { offset: 0 });
      if (id !== undefined) this.resets.add(id);
      return;
    }
    if (type !== CAPSULE.stream && type !== CAPSULE.streamFin) return;
    const at = { offset: 0 };
    const id = readVarint(payload, at);
    if (id === undefined) return;
    if (type === CAPSULE.streamFin) this.fins.add(id);
    const decoder = this.decoders.get(id) ?? new FrameDecoder(1 << 24);
    this.decoders.set(id, decoder);
    for (const body of decoder.push(payload.subarray(at.offset))) {
      const parsed = decodeEnvelope(codecs.msgpack, body);
      if (parsed.kind === 'event') this.envelopes.set(id, [...(this.envelopes.get(id) ?? []), parsed.envelope]);
    }
  }
}

function readVarint(bytes: Uint8Array, at: { offset: number }): bigint | undefined {
  if (at.offset >= bytes.byteLength) return undefined;
  const first = bytes[at.offset]!;
  const n = 1 << (first >> 6);
  if (at.offset + n > bytes.byteLength) return undefined;
  let value = BigInt(first & 0x3f);
  for (let i = 1; i < n; i++) value = (value << 8n) | BigInt(bytes[at.offset + i]!);
  at.offset += n;
  return value;
}
