import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { codecs, envelopes, FrameDecoder, parseEnvelope, type Envelope } from '../../src/protocol/index.js';

interface ReferenceVectors {
  json: { name: string; sentBy: 'caller' | 'callee'; prefixHex: string; text: string; frame: Envelope }[];
  msgpack: { name: string; hex: string; frame: Envelope }[];
}

const vectors = JSON.parse(readFileSync(new URL('../../spec/vectors/reference.json', import.meta.url), 'utf8')) as ReferenceVectors;
const bytes = (hex: string): Uint8Array => new Uint8Array(Buffer.from(hex.replace(/\s+/g, ''), 'hex'));

/** The codecs against bytes this implementation did not write (spec/vectors/reference.json). */
describe('hand-written vectors from the reference wire', () => {
  for (const v of vectors.json) {
    it(`json: ${v.name}`, () => {
      const framed = new Uint8Array([...bytes(v.prefixHex), ...new TextEncoder().encode(v.text)]);
      const bodies = new FrameDecoder(1 << 20).push(framed);
      expect(bodies).toHaveLength(1);
      const parsed = parseEnvelope(codecs.json.decode(bodies[0]!));
      expect(parsed).toEqual({ kind: 'event', envelope: v.frame });
      // What we send is byte for byte the reference's compact JSON.
      if (v.sentBy === 'callee') expect(new TextDecoder().decode(codecs.json.encode(rebuild(v.frame)))).toBe(v.text);
    });
  }
  for (const v of vectors.msgpack) {
    it(`msgpack: ${v.name}`, () => {
      expect(parseEnvelope(codecs.msgpack.decode(bytes(v.hex)))).toEqual({ kind: 'event', envelope: v.frame });
      expect(Buffer.from(codecs.msgpack.encode(rebuild(v.frame))).toString('hex')).toBe(v.hex.replace(/\s+/g, ''));
    });
  }
});

/** The frame as our own constructors build it, not as the vector file spells it. */
function rebuild(frame: Envelope): Envelope {
  switch (frame.type) {
    case 'call.responded':
      return envelopes.responded(frame.id, frame.payload.output);
    case 'call.completed':
      return envelopes.completed(frame.id);
    case 'call.aborted':
      return envelopes.aborted(frame.id);
    case 'call.error':
      return envelopes.error(frame.id, frame.payload);
    case 'call.requested':
      return envelopes.requested(frame.id, frame.payload);
    default:
      return frame; // the reference has no input streams or credit
  }
}
