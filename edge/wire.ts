// What both Deno edges (the server's, edge/h3-server-edge.ts, and the client's,
// edge/h3-client-edge.ts) need: the bridge's lines (their messages are defined once, for
// both sides of the bridge, in src/webtransport/bridge-protocol.ts), whole writes, and the
// few pieces of HTTP/3 WebTransport framing they read and write themselves.

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

/**
 * Calls `take` with each bridge line of a session's connection after its first, parsed as
 * one of `allowed`, until the connection ends (resolves) or a line fails its schema (throws).
 */
export async function eachMessage<K extends BridgeMessageKind>(
  conn: Deno.Conn,
  early: Uint8Array,
  allowed: readonly K[],
  take: (message: BridgeMessage<K>) => void,
): Promise<void> {
  let held = early;
  const buffer = new Uint8Array(4096);
  for (;;) {
    for (let at = held.indexOf(10); at >= 0; at = held.indexOf(10)) {
      const text = new TextDecoder().decode(held.subarray(0, at));
      held = held.slice(at + 1);
      take(parseBridgeLine(text, allowed));
    }
    if (held.byteLength > BRIDGE_LINE_MAX_BYTES) throw new Error('a bridge line over 64 KiB');
    const n = await conn.read(buffer).catch(() => null);
    if (n === null) return;
    held = concat(held, buffer.subarray(0, n));
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
 * A stream's bytes into its bridge socket, one write at a time (a side that stops reading
 * the socket stops this loop), then the socket's FIN. A stream that fails was reset: that
 * is said on the session's control connection before the socket closes, so the other side
 * does not read the close as an end (WT-2). A stream that fails because its connection is
 * gone was reset by no one, and its socket is left open: a FIN there would read as the
 * caller's end of input. The other side closes it once the session's control connection has
 * said how the session ended (§4.9: a lost connection keeps resumable calls).
 */
export async function streamToSocket(reader: ReadableStreamDefaultReader<Uint8Array>, conn: Deno.Conn, control: Deno.Conn, n: number): Promise<void> {
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      await writeAll(conn, value);
    }
    await conn.closeWrite();
  } catch (error) {
    if (error instanceof Deno.errors.NotConnected) return;
    await writeAll(control, line<'reset'>({ type: 'reset', n })).catch(() => undefined);
    try {
      conn.close();
    } catch {
      // already closed
    }
  }
}

/**
 * A bridge socket's bytes into its stream (`first` ahead of them), each write waiting for
 * QUIC's window (a side that stops reading the stream stops this loop), then the stream's
 * FIN; a socket that fails aborts the stream.
 */
export async function socketToStream(conn: Deno.Conn, writer: WritableStreamDefaultWriter<Uint8Array>, first: Uint8Array = new Uint8Array(0)): Promise<void> {
  const buffer = new Uint8Array(64 * 1024);
  try {
    if (first.byteLength > 0) await writer.write(first);
    for (;;) {
      const got = await conn.read(buffer);
      if (got === null) break;
      await writer.write(buffer.slice(0, got));
    }
    await writer.close();
  } catch {
    await writer.abort().catch(() => undefined);
  }
}
