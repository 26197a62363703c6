import { msgpackCodec, type Codec } from './codec.js';
import type { Envelope, ErrorPayload, RequestedPayload, ResumePayload } from './envelope.js';
import { limits } from './limits.js';
import { readMsgpackEnvelope } from './msgpack-envelope.js';
import { parseEnvelope, parseEnvelopeBySchema, type ParseResult } from './parse.js';
import { ProtocolError } from './protocol-error.js';

/** Constructors of the envelopes (decoded messages; a frame is one encoded envelope) (spec/PROTOCOL.md §4). */
export const envelopes = {
  requested: (id: string, payload: RequestedPayload): Envelope => ({ type: 'call.requested', id, payload }),
  responded: (id: string, output: unknown): Envelope => ({ type: 'call.responded', id, payload: { output } }),
  completed: (id: string): Envelope => ({ type: 'call.completed', id, payload: {} }),
  aborted: (id: string): Envelope => ({ type: 'call.aborted', id, payload: {} }),
  error: (id: string, payload: ErrorPayload): Envelope => ({ type: 'call.error', id, payload }),
  input: (id: string, item: unknown): Envelope => ({ type: 'call.input', id, payload: { item } }),
  end: (id: string): Envelope => ({ type: 'call.end', id, payload: {} }),
  credit: (id: string, bytes: number): Envelope => ({ type: 'call.credit', id, payload: { bytes } }),
  resumable: (id: string, token: string, graceMs: number): Envelope => ({ type: 'call.resumable', id, payload: { token, grace_ms: graceMs } }),
  resume: (id: string, payload: ResumePayload): Envelope => ({ type: 'call.resume', id, payload }),
  resumed: (id: string, inputSeq: number, inputCredit: number): Envelope => ({ type: 'call.resumed', id, payload: { input_seq: inputSeq, input_credit: inputCredit } }),
};

/** Decodes and validates one frame body; never throws. `maxNestingDepth` defaults to the protocol's (LIM-2). */
export function decodeEnvelope(codec: Codec, bytes: Uint8Array, maxNestingDepth: number = limits.maxNestingDepth): ParseResult {
  if (codec === msgpackCodec) {
    const known = readMsgpackEnvelope(bytes, maxNestingDepth);
    if (known) return { kind: 'event', envelope: known };
  }
  return decodeWith(parseEnvelope, codec, bytes, maxNestingDepth);
}

/** decodeEnvelope through the general decoder and the schemas alone, with no shortcut for the fixed shape. */
export function decodeEnvelopeBySchema(codec: Codec, bytes: Uint8Array, maxNestingDepth: number = limits.maxNestingDepth): ParseResult {
  return decodeWith(parseEnvelopeBySchema, codec, bytes, maxNestingDepth);
}

function decodeWith(parse: (value: unknown) => ParseResult, codec: Codec, bytes: Uint8Array, maxNestingDepth: number): ParseResult {
  let value: unknown;
  try {
    value = codec.decode(bytes, maxNestingDepth);
  } catch (error) {
    if (error instanceof ProtocolError) return { kind: 'invalid', error };
    return { kind: 'invalid', error: new ProtocolError('UNDECODABLE', String(error)) };
  }
  return parse(value);
}

/**
 * Encodes one call's `call.responded` frames. A stream sends thousands, and they
 * differ only in their output, which an envelope holds last: where the codec can
 * (msgpack), the bytes before it are encoded once per call, byte for byte what
 * encoding the whole envelope gives. Encoding was a quarter of a server streaming
 * 100 B items, most of it the same strings each time.
 */
export function outputFrameEncoder(codec: Codec, id: string): (output: unknown) => Uint8Array {
  return codec.encoderOfLast?.(envelopes.responded(id, null)) ?? ((output) => codec.encode(envelopes.responded(id, output)));
}

export function encodeEnvelope(codec: Codec, envelope: Envelope): Uint8Array {
  return codec.encode(envelope);
}
