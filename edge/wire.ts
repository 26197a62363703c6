// What both Deno edges (the server's, edge/h3-server-edge.ts, and the client's,
// edge/h3-client-edge.ts) need: the bridge's lines and frames (defined once, for both
// sides of the bridge, in src/webtransport/bridge-protocol.ts and bridge-mux.ts), ordered
// writes, a stream carried between QUIC and the bridge, and the
// few pieces of HTTP/3 WebTransport framing they read and write themselves.

import type { MuxStream } from '../src/webtransport/bridge-mux.ts';
import { BRIDGE_LINE_MAX_BYTES, bridgeLine, type BridgeMessage, type BridgeMessageKind, parseBridgeLine } from '../src/webtransport/bridge-protocol.ts';

const encoder = new TextEncoder();

/** One bridge line. */
export const line = <K extends BridgeMessageKind>(message: BridgeMessage<K>): Uint8Array => encoder.encode(bridgeLine(message));

/**
 * Connects to the server's bridge socket. A burst of streams can fill its listen queue
 * faster than the server accepts, and a unix connect to a full queue fails at once
 * (WouldBlock) rather than wait: that is retried, with a growing pause, for about 10 s.
 */
export async function connectBridge(path: string): Promise<Deno.UnixConn> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await Deno.connect({ transport: 'unix', path });
    } catch (error) {
      if (!(error instanceof Deno.errors.WouldBlock) || attempt >= 200) throw error;
      await new Promise((resolve) => setTimeout(resolve, Math.min(50, attempt)));
    }
  }
}

/** Writes all of `bytes`: a Deno connection's write may take only part of them. */
export async function writeAll(conn: Deno.Conn, bytes: Uint8Array): Promise<void> {
  for (let at = 0; at < bytes.byteLength; ) at += await conn.write(bytes.subarray(at));
}

/**
 * Reads one bridge line from a connection, a chunk at a time (not a byte at a time: this
 * is on every stream's path), and parses it as one of the kinds `allowed`; `rest` is what
 * came after it. Throws when the line fails its schema or the connection ends first.
 */
export async function readMessage<K extends BridgeMessageKind>(
  conn: Deno.Conn,
  allowed: readonly K[],
): Promise<{ value: BridgeMessage<K>; rest: Uint8Array }> {
  let held: Uint8Array = new Uint8Array(0);
  const buffer = new Uint8Array(4096);
  for (;;) {
    const at = held.indexOf(10);
    if (at >= 0) return { value: parseBridgeLine(new TextDecoder().decode(held.subarray(0, at)), allowed), rest: held.slice(at + 1) };
    if (held.byteLength > BRIDGE_LINE_MAX_BYTES) throw new Error('a bridge line over 64 KiB');
    const n = await conn.read(buffer);
    if (n === null) throw new Error('the bridge closed');
    held = concat(held, buffer.subarray(0, n));
  }
}

/** Parts of a session's frames smaller than this are joined into one write; a larger one is written as it is. */
const JOIN_BELOW_BYTES = 16 * 1024;

/**
 * The writer of a session's connection: the mux hands it a turn's frames, and they go out
 * in order, one write at a time (a Deno connection's writes must not overlap), with
 * whatever arrived while the last write was under way. The mux's windows
 * bound what waits here. A failed write closes the connection.
 */
export function connectionWriter(conn: Deno.Conn): { write(parts: Uint8Array[]): void; drained(): Promise<void> } {
  let queue: Uint8Array[] = [];
  let writing: Promise<void> | undefined;
  const drain = async (): Promise<void> => {
    try {
      while (queue.length > 0) {
        const parts = queue;
        queue = [];
        // Small parts (headers, credits, small payloads) go joined; a large payload goes as it is, uncopied.
        for (let at = 0; at < parts.length; ) {
          let end = at;
          let bytes = 0;
          while (end < parts.length && bytes + parts[end]!.byteLength <= JOIN_BELOW_BYTES) bytes += parts[end++]!.byteLength;
          if (end === at) {
            await writeAll(conn, parts[at++]!);
            continue;
          }
          await writeAll(conn, end - at === 1 ? parts[at]! : concat(...parts.slice(at, end)));
          at = end;
        }
      }
    } catch {
      queue = [];
      try {
        conn.close();
      } catch {
        // already closed
      }
    } finally {
      writing = undefined;
    }
  };
  return {
    write(parts) {
      queue.push(...parts);
      writing ??= drain();
    },
    drained: () => writing ?? Promise.resolve(),
  };
}

/** Hands each chunk read from a session's connection to `take` (`early` first), until the connection ends. */
export async function eachChunk(conn: Deno.Conn, early: Uint8Array, take: (chunk: Uint8Array) => void): Promise<void> {
  if (early.byteLength > 0) take(early);
  try {
    for await (const chunk of conn.readable) take(chunk);
  } catch {
    // a broken connection ends the session as its end does
  }
}

/** WebTransport over HTTP/3's bidirectional stream type (draft-ietf-webtrans-http3 §4.2). */
export const WT_STREAM = 0x41;

/** Reads a QUIC variable-length integer (RFC 9000 §16) at `at`, or undefined when `bytes` ends first. */
export function varint(bytes: Uint8Array, at: number): { value: number; next: number } | undefined {
  if (at >= bytes.byteLength) return undefined;
  const length = 1 << (bytes[at]! >> 6);
  if (at + length > bytes.byteLength) return undefined;
  let value = bytes[at]! & 0x3f;
  for (let i = 1; i < length; i++) value = value * 256 + bytes[at + i]!;
  return { value, next: at + length };
}

/** A QUIC variable-length integer, in its shortest form. */
export function encodeVarint(value: number): Uint8Array {
  if (value < 0x40) return Uint8Array.of(value);
  if (value < 0x4000) return Uint8Array.of(0x40 | (value >> 8), value & 0xff);
  if (value < 0x40000000) return Uint8Array.of(0x80 | (value >>> 24), (value >> 16) & 0xff, (value >> 8) & 0xff, value & 0xff);
  const out = new Uint8Array(8);
  new DataView(out.buffer).setBigUint64(0, BigInt(value) | (0xc0n << 56n));
  return out;
}

export function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}

/**
 * Reads from `reader` until `parse` can take what has arrived; returns its result and
 * the bytes after what it took. Undefined when the stream ends first. A peer that sends
 * more than `maxBytes` without a complete item gets an error, not our memory.
 */
export async function readUntil<T>(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  parse: (bytes: Uint8Array) => { value: T; next: number } | undefined,
  maxBytes = 64 * 1024,
): Promise<{ value: T; rest: Uint8Array } | undefined> {
  let held: Uint8Array = new Uint8Array(0);
  for (;;) {
    const parsed = parse(held);
    if (parsed) return { value: parsed.value, rest: held.subarray(parsed.next) };
    if (held.byteLength > maxBytes) throw new Error(`no complete header within ${maxBytes} bytes`);
    const { value, done } = await reader.read();
    if (done) return undefined;
    held = concat(held, value);
  }
}

/** A WebTransport stream's header (its type, then its session's id), or undefined while incomplete. */
export function streamHeader(bytes: Uint8Array): { value: { type: number; session: number }; next: number } | undefined {
  const type = varint(bytes, 0);
  const session = type && varint(bytes, type.next);
  return type && session ? { value: { type: type.value, session: session.value }, next: session.next } : undefined;
}

/**
 * Carries one stream between QUIC and the bridge, both ways (`first`, the bytes that came
 * with its header, ahead of the caller's): each side's loop waits for the other side's
 * window, and FIN crosses as FIN (WT-2). A reset on either side resets the other (the
 * QUIC writer aborted, its reader cancelled; on the bridge, a reset frame). A QUIC stream
 * that fails because its connection is gone was reset by no one: nothing is said for it,
 * and the session's end (lost or closed) decides its call (§4.9).
 */
export async function carryStream(
  quicReader: ReadableStreamDefaultReader<Uint8Array>,
  quicWriter: WritableStreamDefaultWriter<Uint8Array>,
  stream: MuxStream,
  first: Uint8Array = new Uint8Array(0),
): Promise<void> {
  const bridgeWriter = stream.writable.getWriter();
  const bridgeReader = stream.readable.getReader();
  let failed = false;
  const fail = (error: unknown): void => {
    if (failed) return;
    failed = true;
    if (error instanceof Deno.errors.NotConnected) return;
    void quicWriter.abort(error).catch(() => undefined);
    void quicReader.cancel(error).catch(() => undefined);
    void bridgeWriter.abort(error).catch(() => undefined);
    void bridgeReader.cancel(error).catch(() => undefined);
  };
  const up = async (): Promise<void> => {
    if (first.byteLength > 0) await bridgeWriter.write(first);
    for (;;) {
      const { value, done } = await quicReader.read();
      if (done) break;
      await bridgeWriter.write(value);
    }
    await bridgeWriter.close();
  };
  const down = async (): Promise<void> => {
    for (;;) {
      const { value, done } = await bridgeReader.read();
      if (done) break;
      await quicWriter.write(value);
    }
    await quicWriter.close();
  };
  await Promise.allSettled([up().catch(fail), down().catch(fail)]);
}
