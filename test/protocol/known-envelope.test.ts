import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { codecs, decodeEnvelope, envelopes, eventTypes, parseEnvelope, type ParseResult } from '../../src/protocol/index.js';
import { decodeEnvelopeBySchema } from '../../src/protocol/frames.js';
import { readMsgpackEnvelope } from '../../src/protocol/msgpack-envelope.js';
import { parseEnvelopeBySchema } from '../../src/protocol/parse.js';

// The fixed-shape reader (msgpack-envelope.ts) and the hand check (known-envelope.ts) are a
// shortcut through the schemas: on every input they must give what the schemas give, the
// same envelope or the same error, and they must be taken for what calls actually send.

const { msgpack } = codecs;

/** What a result says, comparable: an error by its kind, message, field, id and the frame's type. */
function outcome(result: ParseResult): unknown {
  if (result.kind !== 'invalid') return result;
  const { error } = result;
  return { kind: 'invalid', code: error.kind, message: error.message, field: error.field, callId: error.callId, type: result.type };
}

const agree = (bytes: Uint8Array, depth = 64): void => {
  expect(outcome(decodeEnvelope(msgpack, bytes, depth))).toEqual(outcome(decodeEnvelopeBySchema(msgpack, bytes, depth)));
};

const number = fc.oneof(fc.integer({ min: -3, max: 3 }), fc.constantFrom(0, -0, 1.5, 2 ** 53, 2 ** 53 - 1, -(2 ** 31), 2 ** 32, NaN, Infinity), fc.double());
const value = fc.oneof(number, fc.string(), fc.constant(null), fc.boolean(), fc.anything(), fc.uint8Array({ maxLength: 8 }));
const id = fc.oneof(fc.constantFrom('a', 'k3x9q2-1f', '', 'x'.repeat(31), 'x'.repeat(32), 'x'.repeat(128), 'x'.repeat(129), 'é', '\u0000', 'é'.repeat(64), 'é'.repeat(65)), fc.string(), fc.string({ unit: 'grapheme', maxLength: 60 }), fc.string({ maxLength: 200 }));
const fieldValues: Record<string, fc.Arbitrary<unknown>> = {
  operationId: fc.oneof(fc.constantFrom('bench/echo', ''), value),
  expect: fc.oneof(fc.constantFrom('unary', 'stream', 'other'), value),
  auth_token: fc.oneof(fc.string(), value),
  resume: fc.oneof(fc.record({ grace_ms: number }), value),
  seq: fc.oneof(number, value),
  bytes: fc.oneof(number, value),
  deadline_ms: fc.oneof(number, value),
  credit: fc.oneof(number, value),
};
const fieldValue = (key: string): fc.Arbitrary<unknown> => (Object.hasOwn(fieldValues, key) ? fieldValues[key]! : value);
/** Each type's own fields, so most payloads are near their shape, a field or a value away from valid. */
const fieldsOf: Record<string, string[]> = {
  'call.requested': ['operationId', 'input', 'auth_token', 'expect', 'deadline_ms', 'credit', 'resume'],
  'call.responded': ['output', 'seq'],
  'call.input': ['item', 'seq'],
  'call.credit': ['bytes', 'seq'],
  'call.end': ['seq'],
};
const strangers = ['extra', '__proto__', 'output', 'bytes', 'operationId'];
const payloadOf = (keys: readonly string[]) =>
  fc
    .subarray([...keys])
    .chain((chosen) => fc.tuple(...chosen.map((key) => fieldValue(key).map((v) => [key, v] as const))))
    .map((entries) => Object.fromEntries(entries));
const payloadFor = (type: unknown) => {
  const own = typeof type === 'string' && Object.hasOwn(fieldsOf, type) ? fieldsOf[type]! : [];
  return fc.oneof(
    { weight: 6, arbitrary: payloadOf(own) },
    { weight: 2, arbitrary: fc.constantFrom(...strangers).chain((stranger) => payloadOf([...own, stranger])) },
    { weight: 1, arbitrary: value },
  );
};
const typeOf = fc.oneof(fc.constantFrom(...eventTypes), fc.constant('call.other'), value);
const envelopeLike = typeOf.chain((type) => fc.record({ type: fc.constant(type), id: fc.oneof({ weight: 4, arbitrary: id }, value), payload: payloadFor(type) }));

describe('the fixed-shape reader and the hand check agree with the schemas', () => {
  it('on envelopes of every type with fields right and wrong (20,000 runs)', () => {
    fc.assert(
      fc.property(envelopeLike, (frame) => {
        agree(msgpack.encode(frame));
        expect(outcome(parseEnvelope(frame))).toEqual(outcome(parseEnvelopeBySchema(frame)));
      }),
      { numRuns: 20_000 },
    );
  });

  it('on the same envelopes with keys reordered, missing, extra or repeated, and at shallow depths (5,000 runs)', () => {
    fc.assert(
      fc.property(envelopeLike, fc.subarray(['type', 'id', 'payload', 'extra']), fc.integer({ min: 1, max: 4 }), (frame, keys, depth) => {
        const entries = keys.map((key) => [key, (frame as Record<string, unknown>)[key] ?? 1]);
        const reordered = Object.fromEntries([...entries].reverse());
        agree(msgpack.encode(reordered), depth);
        agree(msgpack.encode(frame), depth);
        expect(outcome(parseEnvelope(reordered))).toEqual(outcome(parseEnvelopeBySchema(reordered)));
      }),
      { numRuns: 5_000 },
    );
  });

  it('on valid frames with bytes flipped, cut short or followed by more (5,000 runs)', () => {
    const frames = [
      envelopes.requested('k3x9q2-1f', { operationId: 'bench/echo', input: { text: 'hello' }, expect: 'unary', deadline_ms: 5, credit: 9, auth_token: 't' }),
      envelopes.responded('k3x9q2-1f', { data: new Uint8Array(100).fill(7) }),
      { type: 'call.responded', id: 'r', payload: { output: [1, { a: 2 }], seq: 3 } },
      envelopes.credit('k3x9q2-1f', 524288),
      { type: 'call.credit', id: 'c', payload: { bytes: 1, seq: 2 } },
      envelopes.completed('k3x9q2-1f'),
      envelopes.aborted('a'),
      envelopes.input('i', 'x'),
      { type: 'call.end', id: 'e', payload: { seq: 4 } },
    ].map((frame) => msgpack.encode(frame));
    fc.assert(
      fc.property(
        fc.constantFrom(...frames),
        fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { maxLength: 4 }),
        fc.option(fc.nat()),
        fc.uint8Array({ maxLength: 3 }),
        (frame, flips, cut, tail) => {
          let bytes = frame.slice();
          for (const [at, byte] of flips) bytes[at % bytes.length] = byte;
          if (cut !== null) bytes = bytes.subarray(0, cut % (bytes.length + 1));
          agree(bytes);
          agree(Uint8Array.of(...bytes, ...tail));
        },
      ),
      { numRuns: 5_000 },
    );
  });

  it('on random bytes behind the envelope’s own header (10,000 runs)', () => {
    const header = msgpack.encode({ type: 'call.responded', id: 'k3x9q2-1f', payload: null }).subarray(0, -1);
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 40 }), (rest) => agree(Uint8Array.of(...header, ...rest))),
      { numRuns: 10_000 },
    );
  });

  it('on values the hand check is given directly: inherited fields, undefined, arrays, class instances', () => {
    const inherited = Object.assign(Object.create({ seq: 1 }) as object, { output: 1 });
    const cases: unknown[] = [
      { type: 'call.responded', id: 'a', payload: inherited },
      { type: 'call.responded', id: 'a', payload: { output: 1, seq: undefined } },
      { type: 'call.requested', id: 'a', payload: { operationId: 'x', expect: undefined } },
      { type: 'call.requested', id: 'a', payload: { operationId: 'x', input: undefined } },
      { type: 'call.credit', id: 'a', payload: [] },
      { type: 'call.completed', id: 'a', payload: new Map() },
      { type: 'call.completed', id: 'a', payload: [] },
      { type: 'call.end', id: 'a', payload: [] },
      Object.assign(Object.create({ type: 'call.completed' }) as object, { id: 'a', payload: {} }),
      [],
      null,
    ];
    for (const value of cases) expect(outcome(parseEnvelope(value))).toEqual(outcome(parseEnvelopeBySchema(value)));
  });
});

describe('the fixed-shape reader is what reads the frames calls send', () => {
  it('reads a request, an answer, an item, credit, input and the ends without the general decoder', () => {
    const sent = [
      envelopes.requested('k3x9q2-1f', { operationId: 'bench/echo', input: { text: 'hello bench' }, expect: 'unary' }),
      envelopes.requested('k3x9q2-1g', { operationId: 'bench/stream', input: { items: 3, itemBytes: 100 }, expect: 'stream', credit: 1048576, deadline_ms: 100, auth_token: 'secret' }),
      envelopes.responded('k3x9q2-1f', { text: 'hello bench' }),
      { type: 'call.responded', id: 'k3x9q2-1f', payload: { output: null, seq: 7 } },
      envelopes.credit('k3x9q2-1g', 0),
      envelopes.input('k3x9q2-1g', { data: 'x' }),
      envelopes.end('k3x9q2-1g'),
      envelopes.completed('k3x9q2-1g'),
      envelopes.aborted('k3x9q2-1g'),
      envelopes.responded('x'.repeat(128), 1),
    ];
    for (const envelope of sent) expect(readMsgpackEnvelope(msgpack.encode(envelope), 64)).toEqual(envelope);
  });

  it('leaves to the schemas what it does not know, so they name its error', () => {
    const tooLong = msgpack.encode(envelopes.responded('x'.repeat(129), 1));
    expect(readMsgpackEnvelope(tooLong, 64)).toBeUndefined();
    const result = decodeEnvelope(msgpack, tooLong);
    expect(result.kind === 'invalid' && result.error.message).toBe('id: must be at most 128 UTF-8 bytes');
    const deep = msgpack.encode(envelopes.responded('a', [[[[1]]]]));
    expect(readMsgpackEnvelope(deep, 5)).toBeUndefined();
    expect(outcome(decodeEnvelope(msgpack, deep, 5))).toMatchObject({ kind: 'invalid', code: 'FRAME_TOO_DEEP' });
  });
});
