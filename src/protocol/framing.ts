import { concatBytes } from './bytes.js';
import { limits } from './limits.js';
import { ProtocolError } from './protocol-error.js';

/**
 * Length-prefixed framing for byte streams (spec/PROTOCOL.md §5.1): a 4-byte
 * big-endian length, then that many bytes holding one encoded envelope.
 */
export function encodeFrame(body: Uint8Array, maxFrameBytes: number = limits.maxFrameBytes): Uint8Array {
  checkFrameBody(body, maxFrameBytes);
  const out = new Uint8Array(limits.framePrefixBytes + body.byteLength);
  setFrameLength(out, 0, body.byteLength);
  out.set(body, limits.framePrefixBytes);
  return out;
}

/** Writes a frame's length prefix (`framePrefixBytes`, big-endian) into `target` at `at`. */
export function setFrameLength(target: Uint8Array, at: number, length: number): void {
  target[at] = length >>> 24;
  target[at + 1] = (length >>> 16) & 0xff;
  target[at + 2] = (length >>> 8) & 0xff;
  target[at + 3] = length & 0xff;
}

/** A body a frame may carry (§5.1): not empty, not over `maxFrameBytes`. Throws ProtocolError. */
export function checkFrameBody(body: Uint8Array, maxFrameBytes: number = limits.maxFrameBytes): void {
  if (body.byteLength === 0) throw new ProtocolError('FRAME_EMPTY', 'frame length 0 is invalid');
  if (body.byteLength > maxFrameBytes) {
    throw new ProtocolError('FRAME_TOO_LARGE', `frame of ${body.byteLength} bytes exceeds maxFrameBytes ${maxFrameBytes}`);
  }
}

/**
 * Incremental decoder: any chunking of the input yields the same frames. A bad
 * length is rejected as soon as its prefix is complete, before any body is kept.
 * After a ProtocolError the stream is unusable: the caller closes it.
 */
export class FrameDecoder {
  private readonly prefix = new Uint8Array(limits.framePrefixBytes);
  private prefixFilled = 0;
  private bodyLength = -1;
  private bodyParts: Uint8Array[] = [];
  private bodyFilled = 0;
  private failed = false;

  constructor(private readonly maxFrameBytes: number = limits.maxFrameBytes) {}

  /** Bytes held for an incomplete frame. */
  get bufferedBytes(): number {
    return this.prefixFilled + this.bodyFilled;
  }

  push(chunk: Uint8Array): Uint8Array[] {
    if (this.failed) throw new ProtocolError('FRAME_TRUNCATED', 'decoder already failed');
    const frames: Uint8Array[] = [];
    let offset = 0;
    while (offset < chunk.byteLength) {
      if (this.bodyLength < 0) {
        const take = Math.min(limits.framePrefixBytes - this.prefixFilled, chunk.byteLength - offset);
        this.prefix.set(chunk.subarray(offset, offset + take), this.prefixFilled);
        this.prefixFilled += take;
        offset += take;
        if (this.prefixFilled < limits.framePrefixBytes) break;
        this.bodyLength = this.checkLength(new DataView(this.prefix.buffer).getUint32(0, false));
        continue;
      }
      const take = Math.min(this.bodyLength - this.bodyFilled, chunk.byteLength - offset);
      this.bodyParts.push(chunk.subarray(offset, offset + take));
      this.bodyFilled += take;
      offset += take;
      if (this.bodyFilled === this.bodyLength) frames.push(this.takeBody());
    }
    return frames;
  }

  /** Call at end of stream: EOF inside a frame is an error (§5.1). */
  end(): void {
    if (this.bufferedBytes > 0) {
      this.failed = true;
      throw new ProtocolError('FRAME_TRUNCATED', `stream ended inside a frame (${this.bufferedBytes} bytes pending)`);
    }
  }

  private checkLength(length: number): number {
    if (length === 0) {
      this.failed = true;
      throw new ProtocolError('FRAME_EMPTY', 'frame length 0 is invalid');
    }
    if (length > this.maxFrameBytes) {
      this.failed = true;
      throw new ProtocolError('FRAME_TOO_LARGE', `declared frame length ${length} exceeds maxFrameBytes ${this.maxFrameBytes}`);
    }
    return length;
  }

  private takeBody(): Uint8Array {
    const parts = this.bodyParts;
    // Copy so the frame does not pin the caller's (possibly large, reused) chunks.
    const body = parts.length === 1 ? parts[0]!.slice() : concatBytes(parts, this.bodyLength);
    this.bodyParts = [];
    this.bodyFilled = 0;
    this.bodyLength = -1;
    this.prefixFilled = 0;
    return body;
  }
}
