// The HTTP/3 bridge's frames: their kinds, sizes and windows, and the header codec, defined
// once for the four ends of the bridge (docs/http3.md "The bridge"): the server's Node (src/transports/h3-bridge.ts),
// the client's Node (src/webtransport/deno.ts), and both Deno edges (edge/*.ts). Like
// ./bridge-protocol.ts it imports nothing: Deno runs the edges from source, with --no-config.
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
export const CREDIT_AFTER_BYTES = MUX_STREAM_WINDOW_BYTES / 4;
export const MAX_REASON_BYTES = 1024;
/** DATA pieces smaller than this, of one stream and read together, are joined into one chunk for its reader. */
export const HOLD_BELOW_BYTES = 16 * 1024;
export const MAX_STREAM_ID = 2 ** 32 - 1;
export const BARE_KINDS: Readonly<Record<number, string>> = { [MUX_KIND.open]: 'an open', [MUX_KIND.fin]: 'a fin', [MUX_KIND.reset]: 'a reset', [MUX_KIND.lost]: 'a lost' };

/** The peer broke the bridge's framing or flow control: its session ends. */
export class BridgeMuxError extends Error {
  override readonly name = 'BridgeMuxError';
}

/** A frame's header: kind, stream id and payload length (see the top of this file). */
export function header(kind: number, id: number, length: number): Uint8Array {
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

/** A 4-byte big-endian unsigned integer, as a credit's or a close code's payload carries it. */
export function u32Bytes(value: number): Uint8Array {
  return header(0, value, 0).subarray(1, 5);
}

/** The 4-byte big-endian unsigned integer at `at`. */
export const u32 = (bytes: Uint8Array, at: number): number => bytes[at]! * 0x1000000 + ((bytes[at + 1]! << 16) | (bytes[at + 2]! << 8) | bytes[at + 3]!);

