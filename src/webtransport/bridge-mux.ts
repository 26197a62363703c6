// The HTTP/3 bridge's streams, multiplexed on one unix connection per session (docs/http3.md
// "The bridge"), defined once for its four ends: the server's Node (src/transports/h3-bridge.ts),
// the client's Node (src/webtransport/deno.ts), and both Deno edges (edge/*.ts). Like
// ./bridge-protocol.ts it imports nothing: Deno runs the edges with --no-config, from source.
//
// After a session's opening lines (./bridge-protocol.ts), its connection carries frames:
//   kind (1 byte) | stream id (4 bytes, big-endian) | payload length (4 bytes, big-endian) | payload
// Only one side opens streams (the server's edge, for a caller's stream; the client's Node,
// for its own), with ids 0, 1, 2, … in order. Each direction of each stream has its own
// window: a side sends a stream's DATA only within the credit its reader granted, and grants
// more as its reader takes bytes, so one stream that is not read never stalls the others on
// the connection. A peer that breaks these rules (an unknown kind, a payload over the largest
// frame, a stream it never opened, bytes over a window, credit over a window, data after a
// FIN, a payload where none belongs) ends the session, never the process.

/** Frame kinds: 1 to 7, in order (a header's kind is checked against that range). */
export const MUX_KIND = {
  /** The opener's new stream (no payload). */
  open: 1,
  /** Bytes of the stream, within the receiver's credit. */
  data: 2,
  /** The sender's half of the stream is over (a WebTransport FIN). */
  fin: 3,
  /** The stream is reset both ways: its sender reset it, or learned that its peer did. */
  reset: 4,
  /** The receiver took this many bytes (4-byte payload): the sender may send as many more. */
  credit: 5,
  /** The session ends with this code and reason (stream id 0; payload: 4-byte code, UTF-8 reason; spec §5.4). */
  close: 6,
  /** From the server's edge: the session's QUIC connection was lost, not closed (§4.9). */
  lost: 7,
} as const;

export const MUX_HEADER_BYTES = 9;
/** Each direction of a stream may have this many bytes sent and not yet taken by its reader. */
export const MUX_STREAM_WINDOW_BYTES = 256 * 1024;
/** The largest payload a frame may announce: a DATA never exceeds a window. */
export const MUX_MAX_PAYLOAD_BYTES = MUX_STREAM_WINDOW_BYTES;
/** A reader grants credit once it has taken this much, not per chunk: small calls never spend a frame on it. */
const CREDIT_AFTER_BYTES = MUX_STREAM_WINDOW_BYTES / 4;
const MAX_REASON_BYTES = 1024;
/** DATA pieces smaller than this, of one stream and read together, are joined into one chunk for its reader. */
const HOLD_BELOW_BYTES = 16 * 1024;
const MAX_STREAM_ID = 2 ** 32 - 1;
const BARE_KINDS: Readonly<Record<number, string>> = { [MUX_KIND.open]: 'an open', [MUX_KIND.fin]: 'a fin', [MUX_KIND.reset]: 'a reset', [MUX_KIND.lost]: 'a lost' };

/** The peer broke the bridge's framing or flow control: its session ends. */
export class BridgeMuxError extends Error {
  override readonly name = 'BridgeMuxError';
}

/** One multiplexed stream: the web stream pair a WebTransport stream is. */
export interface MuxStream {
  readonly id: number;
  readonly readable: ReadableStream<Uint8Array>;
  readonly writable: WritableStream<Uint8Array>;
}

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

function header(kind: number, id: number, length: number): Uint8Array {
  const out = new Uint8Array(MUX_HEADER_BYTES);
  out[0] = kind;
  out[1] = id >>> 24;
  out[2] = (id >>> 16) & 0xff;
  out[3] = (id >>> 8) & 0xff;
  out[4] = id & 0xff;
  out[5] = length >>> 24;
  out[6] = (length >>> 16) & 0xff;
  out[7] = (length >>> 8) & 0xff;
  out[8] = length & 0xff;
  return out;
}

function u32Bytes(value: number): Uint8Array {
  return header(0, value, 0).subarray(1, 5);
}

const u32 = (bytes: Uint8Array, at: number): number => bytes[at]! * 0x1000000 + ((bytes[at + 1]! << 16) | (bytes[at + 2]! << 8) | bytes[at + 3]!);

/** A session's streams on one connection: feed it the connection's bytes, and it writes frames through `write`. */
export class BridgeMux {
  private readonly streams = new Map<number, Stream>();
  /** The highest stream id opened so far: a frame for one above it names a stream that never was. */
  private highest = -1;
  private out: Uint8Array[] = [];
  private flushing = false;
  private ended = false;
  private parts: Uint8Array[] = [];
  private partsBytes = 0;
  /** The frame being read: its header, and for DATA its stream (undefined: one that has ended here) and the bytes still to come. */
  private held: { stream: Stream; pieces: Uint8Array[]; bytes: number } | undefined;
  private frameHead: { kind: number; id: number; length: number; stream: Stream | undefined } | undefined;

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
  private hold(stream: Stream, piece: Uint8Array): void {
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
  private streamFor(id: number): Stream | undefined {
    const stream = this.streams.get(id);
    if (stream === undefined && id > this.highest) throw new BridgeMuxError(`a frame for stream ${id}, which was never opened`);
    return stream;
  }

  private add(id: number): Stream {
    const stream = new Stream(id, this);
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

/** One stream's two halves, each under its own window. */
class Stream implements MuxStream {
  readonly readable: ReadableStream<Uint8Array>;
  readonly writable: WritableStream<Uint8Array>;
  private readController!: ReadableStreamDefaultController<Uint8Array>;
  private writeController!: WritableStreamDefaultController;
  /** Arrived, not yet taken by the reader. */
  private queue: Uint8Array[] = [];
  private queued = 0;
  /** Taken by the reader, not yet credited back. */
  private taken = 0;
  /** A read waits and nothing is queued: the next DATA goes straight to it. */
  private wanted = false;
  private finReceived = false;
  private readDone = false;
  private writeDone = false;
  /** What the peer's reader still grants us. */
  private sendCredit = MUX_STREAM_WINDOW_BYTES;
  private creditWaiter: { resolve: () => void; reject: (error: Error) => void } | undefined;

  constructor(
    readonly id: number,
    private readonly mux: BridgeMux,
  ) {
    // A high-water mark of 0: a byte leaves the queue only when a read asks for it, and only then is it credited.
    this.readable = new ReadableStream<Uint8Array>(
      {
        start: (controller) => void (this.readController = controller),
        pull: () => this.pull(),
        cancel: () => this.reset(),
      },
      { highWaterMark: 0 },
    );
    this.writable = new WritableStream<Uint8Array>({
      start: (controller) => void (this.writeController = controller),
      write: (chunk) => this.write(chunk),
      close: () => {
        if (this.writeDone) throw new Error('the stream was reset');
        this.writeDone = true;
        this.mux.send(MUX_KIND.fin, this.id);
        this.forgetIfOver();
      },
      abort: () => this.reset(),
    });
  }

  data(payload: Uint8Array): void {
    if (this.finReceived) throw new BridgeMuxError(`data on stream ${this.id} after its end`);
    if (this.queued + this.taken + payload.byteLength > MUX_STREAM_WINDOW_BYTES) throw new BridgeMuxError(`data on stream ${this.id} over its window`);
    if (this.readDone) return;
    if (this.wanted) {
      this.wanted = false;
      this.readController.enqueue(payload);
      this.took(payload.byteLength);
      return;
    }
    this.queue.push(payload);
    this.queued += payload.byteLength;
  }

  fin(): void {
    if (this.finReceived) throw new BridgeMuxError(`a second end of stream ${this.id}`);
    this.finReceived = true;
    if (this.queue.length === 0) this.endRead();
    this.forgetIfOver();
  }

  credit(bytes: number): void {
    this.sendCredit += bytes;
    if (this.sendCredit > MUX_STREAM_WINDOW_BYTES) throw new BridgeMuxError(`credit on stream ${this.id} over its window`);
    this.creditWaiter?.resolve();
    this.creditWaiter = undefined;
  }

  /** Reset by the peer, or the session is gone: both halves fail. */
  gone(error: Error, keepEnded = false): void {
    if (!(keepEnded && this.finReceived)) {
      this.queue = [];
      this.queued = 0;
    }
    if (!this.readDone && !(keepEnded && this.finReceived)) {
      this.readDone = true;
      this.readController.error(error);
    }
    if (!this.writeDone) {
      this.writeDone = true;
      this.writeController.error(error);
    }
    this.creditWaiter?.reject(error);
    this.creditWaiter = undefined;
    this.mux.forget(this.id);
  }

  private pull(): void {
    const chunk = this.queue.shift();
    if (chunk === undefined) {
      this.wanted = !this.readDone;
      return;
    }
    this.queued -= chunk.byteLength;
    this.readController.enqueue(chunk);
    this.took(chunk.byteLength);
    if (this.queue.length === 0 && this.finReceived) this.endRead();
  }

  private took(bytes: number): void {
    this.taken += bytes;
    if (this.taken < CREDIT_AFTER_BYTES || this.finReceived) return;
    const payload = u32Bytes(this.taken);
    this.taken = 0;
    this.mux.send(MUX_KIND.credit, this.id, payload);
  }

  private endRead(): void {
    if (this.readDone) return;
    this.readDone = true;
    this.readController.close();
  }

  private write(chunk: Uint8Array): Promise<void> | undefined {
    if (this.writeDone || this.mux.isEnded) return Promise.reject(new Error('the stream was reset'));
    if (chunk.byteLength <= this.sendCredit) {
      this.sendCredit -= chunk.byteLength;
      if (chunk.byteLength > 0) this.mux.send(MUX_KIND.data, this.id, chunk);
      return undefined;
    }
    return this.writeWithinCredit(chunk);
  }

  /** A chunk larger than the credit: what fits now, the rest as the reader grants more. */
  private async writeWithinCredit(chunk: Uint8Array): Promise<void> {
    for (let at = 0; at < chunk.byteLength; ) {
      if (this.sendCredit === 0) await new Promise<void>((resolve, reject) => (this.creditWaiter = { resolve, reject }));
      if (this.writeDone) throw new Error('the stream was reset');
      const n = Math.min(this.sendCredit, chunk.byteLength - at);
      this.sendCredit -= n;
      this.mux.send(MUX_KIND.data, this.id, chunk.subarray(at, at + n));
      at += n;
    }
  }

  /** This side resets the stream: the peer hears it once, and both halves end here. */
  private reset(): void {
    if (this.readDone && this.writeDone) return;
    this.mux.send(MUX_KIND.reset, this.id);
    this.gone(new Error('the stream was reset here'));
  }

  private forgetIfOver(): void {
    if (this.finReceived && this.writeDone) this.mux.forget(this.id);
  }
}
