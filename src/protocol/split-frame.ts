import type { Codec } from './codec.js';
import { outputFrameEncoder } from './frames.js';

/**
 * One encoded frame in two pieces: `head`, the envelope's bytes up to and including
 * the header of its last byte string, then `body`, that byte string's own bytes, never
 * copied into the frame. Together, byte for byte what encoding the whole envelope
 * gives; a transport that can write both in one message sends them as one frame.
 */
export interface SplitFrame {
  readonly head: Uint8Array;
  readonly body: Uint8Array;
  readonly byteLength: number;
}

/** A byte string shorter than this is copied into its frame as usual: the copy costs less than a write of its own. */
export const SPLIT_MIN_BYTES = 8 * 1024;

const MSGPACK_NIL = 0xc0;

/**
 * Encodes one call's stream items as split frames where it can: msgpack, an item that
 * is a plain object whose last value is a byte string of `SPLIT_MIN_BYTES` or more
 * (an exec's `{stream, data}`). Returns undefined for any other item, which is then
 * encoded whole. Undefined for a codec whose byte strings are not length then bytes (JSON).
 */
export function outputFrameSplitter(codec: Codec, id: string): ((output: unknown) => SplitFrame | undefined) | undefined {
  if (codec.name !== 'msgpack') return undefined;
  const encode = outputFrameEncoder(codec, id);
  return (output) => {
    if (typeof output !== 'object' || output === null || Object.getPrototypeOf(output) !== Object.prototype) return undefined;
    const keys = Object.keys(output);
    const last = keys[keys.length - 1];
    if (last === undefined) return undefined;
    const body = (output as Record<string, unknown>)[last];
    if (!(body instanceof Uint8Array) || body.byteLength < SPLIT_MIN_BYTES) return undefined;
    // The item with a nil where its bytes go: everything before that nil is the head's.
    const withNil = encode({ ...output, [last]: null });
    if (withNil[withNil.byteLength - 1] !== MSGPACK_NIL) return undefined;
    const before = withNil.byteLength - 1;
    const lengthBytes = body.byteLength < 0x10000 ? 2 : 4;
    const head = new Uint8Array(before + 1 + lengthBytes);
    head.set(withNil.subarray(0, before));
    const view = new DataView(head.buffer, head.byteOffset, head.byteLength);
    // bin 16 or bin 32 (bin 8 is below SPLIT_MIN_BYTES), as msgpack encodes those lengths.
    if (lengthBytes === 2) {
      head[before] = 0xc5;
      view.setUint16(before + 1, body.byteLength);
    } else {
      head[before] = 0xc6;
      view.setUint32(before + 1, body.byteLength);
    }
    return { head, body, byteLength: head.byteLength + body.byteLength };
  };
}

export function isSplitFrame(frame: Uint8Array | SplitFrame): frame is SplitFrame {
  return !(frame instanceof Uint8Array);
}
