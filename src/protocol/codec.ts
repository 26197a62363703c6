import { Packr, RESERVE_START_SPACE } from 'msgpackr';
import { fromBase64, toBase64 } from './base64.js';
import { concatBytes } from './bytes.js';
import { limits } from './limits.js';
import { checkJsonNesting, checkMsgpackNesting } from './nesting.js';
import { ProtocolError } from './protocol-error.js';

/**
 * Encodes one envelope to bytes and back (spec/PROTOCOL.md §5.3). A codec only turns
 * bytes into a value; validating that value as an envelope is parseEnvelope's job.
 */
export interface Codec {
  readonly name: CodecName;
  encode(value: unknown): Uint8Array;
  /**
   * Throws ProtocolError('UNDECODABLE') when the bytes are not exactly one value, and
   * ProtocolError('FRAME_TOO_DEEP') when they nest more than `maxNestingDepth` maps and
   * arrays (default: the protocol's), found before any of them is decoded (LIM-2).
   */
  decode(bytes: Uint8Array, maxNestingDepth?: number): unknown;
  /** Throws ProtocolError('FRAME_TOO_DEEP') as `decode` would for these bytes' depth, without decoding them. */
  checkNesting(bytes: Uint8Array, maxNestingDepth: number): void;
  /**
   * Where encodings concatenate (msgpack): an encoder of `template`, whose last value
   * is `null`, with that value replaced by each one given; the bytes before it are
   * encoded once. Byte for byte what `encode` gives for the whole. Undefined when the
   * template does not end in its null. See outputFrameEncoder.
   */
  encoderOfLast?(template: unknown): ((last: unknown) => Uint8Array) | undefined;
}

export type CodecName = 'msgpack' | 'json';

// Plain maps, no shared record structures: each frame decodes on its own (§5.3).
const packr = new Packr({
  useRecords: false,
  mapsAsObjects: true,
  moreTypes: false,
  structuredClone: false,
  bundleStrings: false,
  variableMapSize: true,
  // undefined would otherwise travel as a msgpackr-only extension that other peers cannot read.
  encodeUndefinedAsNil: true,
});

/** The most msgpackr can reserve ahead of a value (its option's low byte). */
const MAX_RESERVED = 0xff;
/** msgpack's nil: what `null` encodes to. */
const MSGPACK_NIL = 0xc0;

export const msgpackCodec: Codec = {
  name: 'msgpack',
  encode: (value) => packr.pack(value),
  encoderOfLast(template) {
    const whole = packr.pack(template);
    if (whole[whole.byteLength - 1] !== MSGPACK_NIL) return undefined;
    // A copy: `whole` is a view of msgpackr's shared buffer, which it would keep alive.
    const prefix = whole.slice(0, whole.byteLength - 1);
    if (prefix.byteLength > MAX_RESERVED) return (last) => concatBytes([prefix, packr.pack(last)]);
    return (last) => {
      // The prefix goes into room msgpackr reserves ahead of the value: no copy of the value.
      const bytes = packr.pack(last, RESERVE_START_SPACE | prefix.byteLength);
      bytes.set(prefix, 0);
      return bytes;
    };
  },
  checkNesting: checkMsgpackNesting,
  decode(bytes, maxNestingDepth = limits.maxNestingDepth) {
    if (bytes.byteLength === 0) throw new ProtocolError('UNDECODABLE', 'empty frame');
    checkMsgpackNesting(bytes, maxNestingDepth);
    let values: unknown[];
    try {
      values = packr.unpackMultiple(bytes as Parameters<typeof packr.unpackMultiple>[0]) ?? [];
    } catch (error) {
      throw new ProtocolError('UNDECODABLE', `not valid msgpack: ${messageOf(error)}`);
    }
    if (values.length !== 1) {
      throw new ProtocolError('UNDECODABLE', `a frame holds exactly one msgpack value, found ${values.length}`);
    }
    return values[0];
  },
};

/**
 * The one msgpack value from `start` to the end of `bytes`, for a reader that has read
 * what comes before it by hand (msgpack-envelope.ts). Throws when the value ends before
 * the bytes do, or after. Nesting (LIM-2) is the caller's to check first, as `decode` does.
 */
export function msgpackValueAt(bytes: Uint8Array, start: number): unknown {
  return packr.unpack(bytes as Parameters<typeof packr.unpack>[0], { start });
}

const BYTES_TAG = '$base64';
const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });

/** A value as the JSON codec's text, bytes as `{"$base64": "..."}` (§5.3): for writers that take a string. */
export function jsonText(value: unknown): string {
  return JSON.stringify(value, function replacer(this: Record<string, unknown>, key, v: unknown) {
    const original = this[key];
    if (original instanceof Uint8Array) return { [BYTES_TAG]: toBase64(original) };
    return v;
  });
}

/**
 * JSON for peers that speak the reference's JSON. Byte strings, which JSON lacks,
 * travel as `{"$base64": "..."}` (§5.3).
 */
export const jsonCodec: Codec = {
  name: 'json',
  encode(value) {
    return encoder.encode(jsonText(value));
  },
  checkNesting: checkJsonNesting,
  decode(bytes, maxNestingDepth = limits.maxNestingDepth) {
    checkJsonNesting(bytes, maxNestingDepth);
    let text: string;
    try {
      text = decoder.decode(bytes);
    } catch {
      throw new ProtocolError('UNDECODABLE', 'JSON frame is not valid UTF-8');
    }
    try {
      // The reviver runs on every value; a text that cannot spell the tag, not even with
      // \u escapes, holds no bytes and needs none.
      if (!text.includes(BYTES_TAG) && !text.includes('\\u')) return JSON.parse(text) as unknown;
      return JSON.parse(text, (_key, v: unknown) => {
        if (isBytesTag(v)) return fromBase64(v[BYTES_TAG]);
        return v;
      }) as unknown;
    } catch (error) {
      throw new ProtocolError('UNDECODABLE', `not valid JSON: ${messageOf(error)}`);
    }
  },
};

function isBytesTag(v: unknown): v is { [BYTES_TAG]: string } {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const keys = Object.keys(v);
  return keys.length === 1 && keys[0] === BYTES_TAG && typeof (v as Record<string, unknown>)[BYTES_TAG] === 'string';
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

export const codecs: Readonly<Record<CodecName, Codec>> = { msgpack: msgpackCodec, json: jsonCodec };

/** WebSocket subprotocol names, one per codec (§5.2). */
export const subprotocols: Readonly<Record<CodecName, string>> = {
  msgpack: 'callwire.v1.msgpack',
  json: 'callwire.v1.json',
};

export function codecForSubprotocol(name: string): Codec | undefined {
  for (const [codec, proto] of Object.entries(subprotocols)) {
    if (proto === name) return codecs[codec as CodecName];
  }
  return undefined;
}

/**
 * The codec of a peer that offered no subprotocol, from its first frame (spec §13):
 * an envelope is a map, so JSON starts with `{` (after optional white space) and
 * msgpack with a map header (0x80–0x8f, 0xde, 0xdf). Anything else is left to
 * msgpack, which then reports the frame as undecodable.
 */
export function sniffCodec(firstFrame: Uint8Array): Codec {
  for (const byte of firstFrame) {
    if (byte === 0x20 || byte === 0x09 || byte === 0x0a || byte === 0x0d) continue;
    return byte === 0x7b ? jsonCodec : msgpackCodec;
  }
  return msgpackCodec;
}
