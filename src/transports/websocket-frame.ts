/** The writes of a byte stream that one WebSocket frame needs (Node's net.Socket or tls.TLSSocket). */
export interface FrameSocket {
  cork(): void;
  uncork(): void;
  write(chunk: Uint8Array, callback?: (error?: Error | null) => void): boolean;
}

/** FIN and the binary opcode (RFC 6455 §5.2): a whole binary message in one frame. */
const FIN_BINARY = 0x82;

/**
 * Writes `head` then `body` as one unmasked binary WebSocket message of one frame
 * (RFC 6455 §5.2, a server's frame), without copying `body`: `ws` can only send a
 * message it is given whole, so a frame made of a small head and a large byte
 * string would be copied once to be sent. The frame header and `head` are joined
 * (both are small); `body` is written as it is. `callback` runs when the last byte
 * is written, as `ws.send`'s does.
 *
 * The caller must know that nothing else writes to the socket between these writes
 * except in order (a `ws` socket without permessage-deflate writes each message at
 * once, in the order sent), and that the socket is not masked (the server's side).
 */
export function writeBinaryMessage(socket: FrameSocket, head: Uint8Array, body: Uint8Array, callback: (error?: Error | null) => void): void {
  const length = head.byteLength + body.byteLength;
  const lengthBytes = length < 126 ? 0 : length < 0x10000 ? 2 : 8;
  const first = Buffer.allocUnsafe(2 + lengthBytes + head.byteLength);
  first[0] = FIN_BINARY;
  if (lengthBytes === 0) first[1] = length;
  else if (lengthBytes === 2) {
    first[1] = 126;
    first.writeUInt16BE(length, 2);
  } else {
    first[1] = 127;
    // A 64-bit length; a frame's bytes are bounded far below 2^53.
    first.writeUInt32BE(Math.floor(length / 0x1_0000_0000), 2);
    first.writeUInt32BE(length % 0x1_0000_0000, 6);
  }
  first.set(head, 2 + lengthBytes);
  if (body.byteLength === 0) {
    socket.write(first, callback);
    return;
  }
  socket.cork();
  socket.write(first);
  socket.write(body, callback);
  socket.uncork();
}
