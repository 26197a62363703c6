// The HTTP/3 bridge's session: its streams multiplexed on one unix connection (docs/http3.md
// "The bridge"), defined once for its four ends: the server's Node (src/transports/h3-bridge.ts),
// the client's Node (src/webtransport/deno.ts), and both Deno edges (edge/*.ts), which run it
// from source: it imports only the bridge's own files and the flow primitives.
//
// The frames and their rules are ./bridge-frame.ts's; each stream's windows are
// ./bridge-stream.ts's. A peer that breaks the rules ends the session, never the process.
import { BARE_KINDS, BridgeMuxError, header, HOLD_BELOW_BYTES, MAX_REASON_BYTES, MAX_STREAM_ID, MUX_HEADER_BYTES, MUX_KIND, MUX_MAX_PAYLOAD_BYTES, u32, u32Bytes } from './bridge-frame.js';
import { BridgeStream, type MuxStream, type StreamSession } from './bridge-stream.js';

export { BridgeMuxError, MUX_HEADER_BYTES, MUX_KIND, MUX_MAX_PAYLOAD_BYTES, MUX_STREAM_WINDOW_BYTES } from './bridge-frame.js';
export type { MuxStream } from './bridge-stream.js';

export interface BridgeMuxOptions {
  /** Writes frames to the connection, in order: once per turn, with every frame of the turn. */
  write(parts: Uint8Array[]): void;
  /** Whether this side opens the streams; the other side only accepts them. */
  readonly opens: boolean;
  /** Streams the peer may have open at once (the accepting side). */
  readonly maxStreams?: number;
  /** A stream the peer opened. */
  onStream?(stream: MuxStream): void;
  onClose?(code: number, reason: string): void;
  onLost?(): void;
  /** The peer broke the protocol: every stream has ended; the owner ends the connection. */
  onViolation(error: BridgeMuxError): void;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** A session's streams on one connection: feed it the connection's bytes, and it writes frames through `write`. */
export class BridgeMux implements StreamSession {
  private readonly streams = new Map<number, BridgeStream>();
  /** The highest stream id opened so far: a frame for one above it names a stream that never was. */
  private highest = -1;
  private out: Uint8Array[] = [];
  private flushing = false;
  private ended = false;
  private parts: Uint8Array[] = [];
  private partsBytes = 0;
  /** The frame being read: its header, and for DATA its stream (undefined: one that has ended here) and the bytes still to come. */
  private held: { stream: BridgeStream; pieces: Uint8Array[]; bytes: number } | undefined;
  private frameHead: { kind: number; id: number; length: number; stream: BridgeStream | undefined } | undefined;

  constructor(private readonly options: BridgeMuxOptions) {}

  /** Streams open on this session. */
  get size(): number {
    return this.streams.size;
  }

  /** Opens a stream (the opening side only). */
  open(): MuxStream {
    if (!this.options.opens) throw new Error('this side of the bridge does not open streams');
    if (this.ended) throw new Error('the session has ended');
    if (this.highest >= MAX_STREAM_ID) throw new Error('the session has used every stream id');
    const stream = this.add(++this.highest);
    this.send(MUX_KIND.open, stream.id);
    return stream;
  }

  /** Tells the peer the session ends with `code` and `reason`; written at once, so the caller may close the connection next. */
  close(code: number, reason: string): void {
    const text = encoder.encode(reason).subarray(0, MAX_REASON_BYTES);
    const payload = new Uint8Array(4 + text.byteLength);
    payload.set(u32Bytes(code));
    payload.set(text, 4);
    this.send(MUX_KIND.close, 0, payload);
    this.flush();
  }

  /** Tells the peer the session's QUIC connection was lost; written at once. */
  lost(): void {
    this.send(MUX_KIND.lost, 0);
    this.flush();
  }

  /** The connection is gone: every stream still open ends as reset. */
  end(reason = 'the session ended'): void {
    if (this.ended) return;
    this.ended = true;
    const error = new Error(reason);
    // A stream whose end has arrived keeps what it holds for its reader.
    for (const stream of this.streams.values()) stream.gone(error, true);
    this.streams.clear();
  }

  /** Bytes from the connection. */
  receive(chunk: Uint8Array): void {
    if (this.ended) return;
    this.parts.push(chunk);
    this.partsBytes += chunk.byteLength;
    try {
      this.parse();
      this.release();
    } catch (error) {
      // Anything else thrown while reading a peer's bytes is a bug of ours, and still ends this session only.
      const violation = error instanceof BridgeMuxError ? error : new BridgeMuxError(`the session's frames could not be read: ${String(error)}`);
      this.end(violation.message);
      this.options.onViolation(violation);
    }
  }

  private parse(): void {
    while (!this.ended) {
      if (this.frameHead === undefined) {
        if (this.partsBytes < MUX_HEADER_BYTES) return;
        const head = this.take(MUX_HEADER_BYTES);
        if (head[0]! < MUX_KIND.open || head[0]! > MUX_KIND.lost) throw new BridgeMuxError(`a frame of unknown kind ${head[0]}`);
        const length = u32(head, 5);
        if (length > MUX_MAX_PAYLOAD_BYTES) throw new BridgeMuxError(`a frame of ${length} bytes, over the largest (${MUX_MAX_PAYLOAD_BYTES})`);
        const kind = head[0]!;
        const id = u32(head, 1);
        this.frameHead = { kind, id, length, stream: kind === MUX_KIND.data ? this.streamFor(id) : undefined };
      }
      const head = this.frameHead;
      if (head.kind === MUX_KIND.data) {
        // A DATA payload goes to its stream as it arrives, in views of what was read: no copy, and no wait for the whole frame.
        while (head.length > 0 && this.partsBytes > 0) {
          const piece = this.take(Math.min(head.length, this.parts[0]!.byteLength));
          head.length -= piece.byteLength;
          if (head.stream) this.hold(head.stream, piece);
        }
        if (head.length > 0) return;
        this.frameHead = undefined;
        continue;
      }
      if (this.partsBytes < head.length) return;
      const { kind, id, length } = this.frameHead;
      this.frameHead = undefined;
      // What a stream was given comes before what follows it on the connection (its fin, its reset).
      this.release();
      this.frame(kind, id, this.take(length));
    }
  }

  /**
   * Small DATA pieces of one stream read together go to it as one chunk: a QUIC stream's
   * small reads at the edge become one read of the stream here, not one each. A large
   * piece goes as it is, uncopied.
   */
  private hold(stream: BridgeStream, piece: Uint8Array): void {
    if (this.held !== undefined && (this.held.stream !== stream || piece.byteLength >= HOLD_BELOW_BYTES)) this.release();
    if (piece.byteLength >= HOLD_BELOW_BYTES) return stream.data(piece);
    this.held ??= { stream, pieces: [], bytes: 0 };
    this.held.pieces.push(piece);
    this.held.bytes += piece.byteLength;
    if (this.held.bytes >= HOLD_BELOW_BYTES) this.release();
  }

  private release(): void {
    const held = this.held;
    if (held === undefined) return;
    this.held = undefined;
    if (held.pieces.length === 1) return held.stream.data(held.pieces[0]!);
    const joined = new Uint8Array(held.bytes);
    let at = 0;
    for (const piece of held.pieces) {
      joined.set(piece, at);
      at += piece.byteLength;
    }
    held.stream.data(joined);
  }

  /** `n` bytes off the front of what has arrived: a view when one chunk holds them, else a copy. */
  private take(n: number): Uint8Array {
    this.partsBytes -= n;
    const first = this.parts[0];
    if (first === undefined || n === 0) return new Uint8Array(0);
    if (first.byteLength >= n) {
      if (first.byteLength === n) this.parts.shift();
      else this.parts[0] = first.subarray(n);
      return first.subarray(0, n);
    }
    const out = new Uint8Array(n);
    for (let at = 0; at < n; ) {
      const part = this.parts[0]!;
      const k = Math.min(part.byteLength, n - at);
      out.set(k === part.byteLength ? part : part.subarray(0, k), at);
      at += k;
      if (k === part.byteLength) this.parts.shift();
      else this.parts[0] = part.subarray(k);
    }
    return out;
  }

  private frame(kind: number, id: number, payload: Uint8Array): void {
    // These carry nothing: bytes there are a peer out of step, not an extension.
    if (BARE_KINDS[kind] !== undefined && payload.byteLength > 0) throw new BridgeMuxError(`${BARE_KINDS[kind]} with a payload`);
    if (kind === MUX_KIND.open) {
      if (this.options.opens) throw new BridgeMuxError('the peer opened a stream, and only this side opens them');
      if (id !== this.highest + 1) throw new BridgeMuxError(`the peer opened stream ${id}, not the next one (${this.highest + 1})`);
      if (this.streams.size >= (this.options.maxStreams ?? 65_536)) throw new BridgeMuxError(`the peer opened more than ${this.options.maxStreams ?? 65_536} streams at once`);
      this.highest = id;
      this.options.onStream?.(this.add(id));
      return;
    }
    if (kind === MUX_KIND.close) {
      if (payload.byteLength < 4) throw new BridgeMuxError('a close without its code');
      this.options.onClose?.(u32(payload, 0), decoder.decode(payload.subarray(4)));
      return;
    }
    if (kind === MUX_KIND.lost) {
      this.options.onLost?.();
      return;
    }
    const stream = this.streamFor(id);
    if (stream === undefined) return;
    if (kind === MUX_KIND.fin) stream.fin();
    else if (kind === MUX_KIND.reset) stream.gone(new Error('the stream was reset'));
    else if (payload.byteLength !== 4) throw new BridgeMuxError('a credit without its 4-byte amount');
    else stream.credit(u32(payload, 0));
  }

  /** The open stream `id`, or undefined for one that has ended here (the peer's frame crossed our end of it); one never opened is a violation. */
  private streamFor(id: number): BridgeStream | undefined {
    const stream = this.streams.get(id);
    if (stream === undefined && id > this.highest) throw new BridgeMuxError(`a frame for stream ${id}, which was never opened`);
    return stream;
  }

  private add(id: number): BridgeStream {
    const stream = new BridgeStream(id, this);
    this.streams.set(id, stream);
    return stream;
  }

  /** @internal The stream's two halves are over: frames for it are dropped from now on. */
  forget(id: number): void {
    this.streams.delete(id);
  }

  /** Whether the session has ended here (its connection is gone, or its peer broke the protocol). */
  get isEnded(): boolean {
    return this.ended;
  }

  /** @internal Queues a frame; the turn's frames are written together. */
  send(kind: number, id: number, payload?: Uint8Array): void {
    if (this.ended) return;
    this.out.push(header(kind, id, payload?.byteLength ?? 0));
    if (payload !== undefined && payload.byteLength > 0) this.out.push(payload);
    if (this.flushing) return;
    this.flushing = true;
    queueMicrotask(() => this.flush());
  }

  private flush(): void {
    this.flushing = false;
    if (this.out.length === 0) return;
    const parts = this.out;
    this.out = [];
    this.options.write(parts);
  }
}
