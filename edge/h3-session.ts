// A WebTransport-over-HTTP/3 client session on Deno's raw QUIC connection.
//
// Deno 2.9.6 has a WebTransport client, but its streams never send FIN or RESET
// (docs/http3.md "Upstream defects"): a session of it can open no more than 100 streams in its life,
// and a half-close never arrives. This speaks the few parts of HTTP/3 a WebTransport
// session needs (RFC 9114 SETTINGS, an extended CONNECT, draft-ietf-webtrans-http3
// stream headers) on top of Deno's QUIC streams, whose close does send FIN.

import { concat, encodeVarint, readUntil, varint, WT_STREAM } from './wire.ts';

const CONTROL_STREAM = 0x00;
const FRAME_HEADERS = 0x01;
const FRAME_SETTINGS = 0x04;
// RFC 9220, RFC 9297, draft-ietf-webtrans-http3 (current and the two earlier spellings Chromium and Deno read).
const SETTINGS: [number, number][] = [
  [0x08, 1], // ENABLE_CONNECT_PROTOCOL
  [0x33, 1], // H3_DATAGRAM
  [0xc671706a, 1], // WEBTRANSPORT_MAX_SESSIONS
  [0x2b603742, 1], // ENABLE_WEBTRANSPORT (before draft 07)
];

export interface H3Session {
  readonly conn: Deno.QuicConn;
  /** Opens a WebTransport stream of this session: a QUIC stream whose first bytes say so. */
  openStream(): Promise<Deno.QuicBidirectionalStream>;
  /** Resolves when the session ends: the CONNECT stream or the connection closes. */
  readonly closed: Promise<{ closeCode: number; reason: string }>;
  close(closeCode?: number, reason?: string): void;
}

/** Opens a session at `url` (https://host:port/path), pinning a self-signed certificate by its SHA-256 if given. */
export async function openH3Session(url: URL, certHash: Uint8Array | undefined, idleTimeoutMs: number): Promise<H3Session> {
  const conn = await Deno.connectQuic({
    hostname: url.hostname.replace(/^\[|\]$/g, ''),
    port: Number(url.port || 443),
    alpnProtocols: ['h3'],
    keepAliveInterval: Math.max(1000, Math.floor(idleTimeoutMs / 3)),
    maxIdleTimeout: idleTimeoutMs,
    // Not in Deno's public typings, but read by connectQuic: Deno's own WebTransport passes it.
    ...(certHash ? { serverCertificateHashes: [{ algorithm: 'sha-256', value: certHash }] } : {}),
  } as Deno.ConnectQuicOptions<false>);
  try {
    // Our control stream stays open for the connection's life (closing it is an error, RFC 9114 §6.2.1).
    const control = await conn.createUnidirectionalStream();
    const settings = concat(...SETTINGS.flatMap(([id, value]) => [encodeVarint(id), encodeVarint(value)]));
    const writer = control.getWriter();
    await writer.write(concat(encodeVarint(CONTROL_STREAM), encodeVarint(FRAME_SETTINGS), encodeVarint(settings.byteLength), settings));
    // A lost connection fails this loop too: that is the session's end, never this process's.
    void drainPeerStreams(conn).catch(() => undefined);

    const connect = await conn.createBidirectionalStream();
    const connectWriter = connect.writable.getWriter();
    await connectWriter.write(headersFrame(url));
    const reader = connect.readable.getReader();
    const answer = await readUntil(reader, frame);
    if (!answer) throw new Error('the server closed the session request without an answer');
    if (answer.value.type !== FRAME_HEADERS) throw new Error(`the server answered the session request with frame type ${answer.value.type}`);
    const status = statusOf(answer.value.payload);
    if (status === undefined || status < 200 || status > 299) throw new Error(`the server refused the session: HTTP ${status ?? '(no status)'}`);

    const sessionId = Number(connect.writable.id);
    const header = concat(encodeVarint(WT_STREAM), encodeVarint(sessionId));
    // The session ends when its CONNECT stream does (or the connection goes).
    // The session ends with its connection (Deno's server closes a session by closing the
    // connection with the session's code and reason), or when its CONNECT stream ends,
    // which then closes the connection here: either way `conn.closed` says how.
    void (async () => {
      for (;;) if ((await reader.read()).done) break;
    })()
      .catch(() => undefined)
      .finally(() => {
        try {
          conn.close({ closeCode: 0, reason: 'session ended' });
        } catch {
          // already closed
        }
      });
    const closed = conn.closed.then(
      (info) => ({ closeCode: info.closeCode, reason: info.reason }),
      (error: unknown) => ({ closeCode: 0, reason: String(error) }),
    );
    return {
      conn,
      closed,
      async openStream() {
        const stream = await conn.createBidirectionalStream();
        const w = stream.writable.getWriter();
        await w.write(header);
        w.releaseLock();
        return stream;
      },
      close(closeCode = 0, reason = '') {
        try {
          conn.close({ closeCode, reason });
        } catch {
          // already closed
        }
      },
    };
  } catch (error) {
    conn.close({ closeCode: 0, reason: 'handshake failed' });
    throw error;
  }
}

/** The server's control and QPACK streams: read and dropped (this client uses no dynamic table). */
async function drainPeerStreams(conn: Deno.QuicConn): Promise<void> {
  for await (const stream of conn.incomingUnidirectionalStreams) {
    void (async () => {
      for await (const _ of stream) {
        // nothing to do with them
      }
    })().catch(() => undefined);
  }
}

/** An HTTP/3 frame: type, length, payload (RFC 9114 §7.1). */
function frame(bytes: Uint8Array): { value: { type: number; payload: Uint8Array }; next: number } | undefined {
  const type = varint(bytes, 0);
  const length = type && varint(bytes, type.next);
  if (!type || !length || length.next + length.value > bytes.byteLength) return undefined;
  return { value: { type: type.value, payload: bytes.subarray(length.next, length.next + length.value) }, next: length.next + length.value };
}

/** QPACK's prefixed integer (RFC 9204 §4.1.1). */
function prefixInt(bits: number, flags: number, value: number): number[] {
  const max = (1 << bits) - 1;
  if (value < max) return [flags | value];
  const out = [flags | max];
  for (value -= max; value >= 128; value = Math.floor(value / 128)) out.push((value % 128) | 128);
  out.push(value);
  return out;
}

/** The extended CONNECT (RFC 9220) as a HEADERS frame: static-table references and plain literals only. */
function headersFrame(url: URL): Uint8Array {
  const text = new TextEncoder();
  const literal = (value: string): number[] => {
    const bytes = text.encode(value);
    return [...prefixInt(7, 0, bytes.byteLength), ...bytes];
  };
  const fields = [
    0x00, 0x00, // required insert count 0, base 0: no dynamic table
    0xc0 | 15, // :method CONNECT (static 15)
    0xc0 | 23, // :scheme https (static 23)
    ...prefixInt(4, 0x50, 0), ...literal(url.host), // :authority (static name 0)
    ...prefixInt(4, 0x50, 1), ...literal(url.pathname + url.search), // :path (static name 1)
    ...prefixInt(3, 0x20, 9), ...text.encode(':protocol'), ...literal('webtransport'),
  ];
  const payload = Uint8Array.from(fields);
  return concat(encodeVarint(FRAME_HEADERS), encodeVarint(payload.byteLength), payload);
}

// QPACK's static table entries for :status (RFC 9204 Appendix A).
const STATIC_STATUS: Record<number, number> = { 24: 103, 25: 200, 26: 304, 27: 404, 28: 503, 63: 100, 64: 204, 65: 206, 66: 302, 67: 400, 68: 403, 69: 421, 70: 425, 71: 500 };

/** Reads QPACK's prefixed integer with `bits` bits in its first byte at `at`. */
function readPrefixInt(bytes: Uint8Array, at: number, bits: number): { value: number; next: number } {
  const max = (1 << bits) - 1;
  let value = bytes[at]! & max;
  let next = at + 1;
  if (value === max) {
    for (let shift = 0; ; shift += 7) {
      const byte = bytes[next++]!;
      value += (byte & 0x7f) * 2 ** shift;
      if ((byte & 0x80) === 0) break;
    }
  }
  return { value, next };
}

/** The :status of a response's field section, as an indexed static entry or a literal with the static name. */
function statusOf(section: Uint8Array): number | undefined {
  let at = 2; // required insert count and base: 0 and 0 from a server that keeps no dynamic table for us
  while (at < section.byteLength) {
    const first = section[at]!;
    if ((first & 0xc0) === 0xc0) {
      // indexed field line, static table: 11xxxxxx
      const index = readPrefixInt(section, at, 6);
      if (STATIC_STATUS[index.value] !== undefined) return STATIC_STATUS[index.value];
      at = index.next;
    } else if ((first & 0xd0) === 0x50) {
      // literal with a static name reference: 01N1xxxx, then the value (H bit, 7-bit length)
      const name = readPrefixInt(section, at, 4);
      const length = readPrefixInt(section, name.next, 7);
      const value = new TextDecoder().decode(section.subarray(length.next, length.next + length.value));
      if (STATIC_STATUS[name.value] !== undefined && (section[name.next]! & 0x80) === 0) return Number(value);
      at = length.next + length.value;
    } else if ((first & 0xe0) === 0x20) {
      // literal with a literal name: 001NHxxx, name, then value
      const name = readPrefixInt(section, at, 3);
      const length = readPrefixInt(section, name.next + name.value, 7);
      at = length.next + length.value;
    } else {
      return undefined; // a dynamic-table reference: never sent to a client that allows no table
    }
  }
  return undefined;
}
