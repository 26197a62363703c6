import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { callIdSchema, codecs, decodeEnvelope, envelopeSchema, eventTypes, FrameDecoder, ProtocolError } from '../../src/protocol/index.js';
import { fromHex, loadVectors } from '../support/vectors.js';

// Random and mutated inputs: the decoder and parser may only ever fail with ProtocolError.
const validStreams = (['msgpack', 'json'] as const).flatMap((c) => loadVectors(c).valid.map((v) => ({ codec: c, bytes: fromHex(v.hex) })));

function feed(codecName: 'msgpack' | 'json', bytes: Uint8Array, cut: number): void {
  const decoder = new FrameDecoder(4096);
  try {
    for (let at = 0; at < bytes.byteLength; at += cut) {
      for (const body of decoder.push(bytes.subarray(at, at + cut))) decodeEnvelope(codecs[codecName], body);
    }
    decoder.end();
  } catch (error) {
    if (!(error instanceof ProtocolError)) throw error;
  }
}

describe('decoder and parser under random input', () => {
  it('never throw anything but ProtocolError on random bytes (10,000 runs)', () => {
    fc.assert(
      fc.property(fc.constantFrom('msgpack' as const, 'json' as const), fc.uint8Array({ maxLength: 300 }), fc.integer({ min: 1, max: 17 }), (c, bytes, cut) => {
        feed(c, bytes, cut);
      }),
      { numRuns: 10_000 },
    );
  });

  it('never throw anything but ProtocolError on mutated valid frames (10,000 runs)', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...validStreams),
        fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 6 }),
        fc.integer({ min: 1, max: 9 }),
        (vector, flips, cut) => {
          const bytes = vector.bytes.slice();
          for (const [pos, value] of flips) bytes[4 + (pos % Math.max(1, bytes.length - 4))] = value;
          feed(vector.codec, bytes, cut);
        },
      ),
      { numRuns: 10_000 },
    );
  });

  it('never throw on random structured values given to the parser (10,000 runs)', () => {
    // Through the codec, as a peer would send it.
    const roundTrip = (v: unknown) => decodeEnvelope(codecs.msgpack, codecs.msgpack.encode(v));
    fc.assert(
      fc.property(
        fc.oneof(
          fc.anything(),
          fc.record({ type: fc.constantFrom('call.requested', 'call.responded', 'call.completed', 'call.aborted', 'call.error', 'x'), id: fc.string(), payload: fc.anything() }),
        ),
        (value) => {
          const r = roundTrip(value);
          // What the parser says must agree with the frame's own shape, not merely be one of its answers.
          const readable = isMap(value) && callIdSchema.safeParse(value['id']).success;
          switch (r.kind) {
            case 'event':
              expect(envelopeSchema.safeParse(codecs.msgpack.decode(codecs.msgpack.encode(value))).success).toBe(true);
              break;
            case 'unknown-type':
              expect(readable).toBe(true);
              expect(eventTypes).not.toContain(r.type);
              break;
            case 'invalid':
              // ENV-5/ENV-6: an id is reported exactly when the frame has a readable one.
              expect(r.error.callId !== undefined).toBe(readable);
              expect(r.error.message).toMatch(/^[\w.()]+: /);
              break;
          }
        },
      ),
      { numRuns: 10_000 },
    );
  });
});

function isMap(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Uint8Array);
}
