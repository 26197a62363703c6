import { describe, expect, it } from 'vitest';
import { codecs, envelopes, limits, ProtocolError, type CodecName } from '../../src/protocol/index.js';
import { nested, nestedEncoding } from '../support/nesting.js';

const MAX = limits.maxNestingDepth;
/** A request whose input is the template's trailing null: the frame is two levels deeper than the input. */
const request = envelopes.requested('a', { operationId: 'test/echo', input: null });

function refusal(run: () => unknown): ProtocolError {
  try {
    run();
  } catch (error) {
    if (error instanceof ProtocolError) return error;
    throw error;
  }
  throw new Error('expected a ProtocolError');
}

for (const name of ['msgpack', 'json'] as const satisfies readonly CodecName[]) {
  const codec = codecs[name];
  describe(`${name}: maxNestingDepth (LIM-2)`, () => {
    it('a frame exactly maxNestingDepth deep decodes; one level more is FRAME_TOO_DEEP', () => {
      const atLimit = codec.decode(nestedEncoding(name, request, MAX - 2)) as { payload: { input: unknown } };
      let depth = 0;
      for (let v: unknown = atLimit.payload.input; Array.isArray(v); v = v[0]) depth++;
      expect(depth).toBe(MAX - 2);
      const over = refusal(() => codec.decode(nestedEncoding(name, request, MAX - 1)));
      expect(over.kind).toBe('FRAME_TOO_DEEP');
      expect(over.message).toContain(`maxNestingDepth ${MAX}`);
    });

    it('an empty array or map is a level: as the one too many, it is refused', () => {
      for (const kind of ['array', 'map'] as const) {
        expect(() => codec.decode(codec.encode(nested(MAX, kind)))).not.toThrow();
        expect(refusal(() => codec.decode(codec.encode(nested(MAX + 1, kind)))).kind).toBe('FRAME_TOO_DEEP');
      }
    });

    it('siblings do not add up: two branches each maxNestingDepth deep in one frame decode', () => {
      const branch = nested(MAX - 1);
      expect(() => codec.decode(codec.encode([branch, branch, { a: nested(MAX - 2) }, 1]))).not.toThrow();
      expect(refusal(() => codec.decode(codec.encode([branch, [branch]]))).kind).toBe('FRAME_TOO_DEEP');
    });

    it('100,000 and 1,000,000 levels are refused as too deep, not by the decoder running out of stack', () => {
      for (const levels of [100_000, 1_000_000]) {
        expect(refusal(() => codec.decode(nestedEncoding(name, request, levels))).kind).toBe('FRAME_TOO_DEEP');
      }
    });

    it('a lower limit given to decode is the one applied', () => {
      expect(() => codec.decode(codec.encode(nested(3)), 3)).not.toThrow();
      expect(refusal(() => codec.decode(codec.encode(nested(4)), 3)).kind).toBe('FRAME_TOO_DEEP');
    });
  });
}

describe('json: what is not structure', () => {
  it('brackets inside strings, escaped quotes included, are not levels', () => {
    const text = `{"a":"${'['.repeat(200)}","b":"\\"${'{'.repeat(200)}\\\\","c":[1]}`;
    expect(codecs.json.decode(new TextEncoder().encode(text))).toMatchObject({ c: [1] });
  });
});

describe('msgpack: what is not structure', () => {
  const frame = (...parts: (number | number[])[]): Uint8Array => new Uint8Array(parts.flat());

  it('array-header bytes inside a byte string are not levels', () => {
    const headers = new Array<number>(200).fill(0x91);
    // {b: bin 8 of 200 fixarray headers}
    const value = codecs.msgpack.decode(frame(0x81, 0xa1, 0x62, 0xc4, 200, headers)) as { b: Uint8Array };
    expect(value.b.byteLength).toBe(200);
  });

  it('the 16- and 32-bit array and map headers are levels too', () => {
    const array16 = [0xdc, 0x00, 0x01];
    const map32 = [0xdf, 0x00, 0x00, 0x00, 0x01, 0xa1, 0x61];
    const deep = (levels: number): Uint8Array => frame(...Array.from({ length: levels }, (_, i) => (i % 2 === 0 ? array16 : map32)), 0xc0);
    expect(() => codecs.msgpack.decode(deep(MAX))).not.toThrow();
    expect(refusal(() => codecs.msgpack.decode(deep(MAX + 1))).kind).toBe('FRAME_TOO_DEEP');
  });

  it("msgpackr's Set extension, which decodes the value after it, nests that value a level deeper", () => {
    const set = [0xd4, 0x73, 0x00]; // fixext 1, type 0x73, one byte of data; the Set's array follows
    const deep = (pairs: number, innermost: number): Uint8Array => frame(...Array.from({ length: pairs }, () => [...set, 0x91]), innermost);
    expect(() => codecs.msgpack.decode(deep(MAX / 2, 0xc0))).not.toThrow();
    expect(refusal(() => codecs.msgpack.decode(deep(MAX / 2, 0x90))).kind).toBe('FRAME_TOO_DEEP');
  });

  // The same Set in ext 8, 16 and 32, whose headers spell the data's length in 1, 2 or 4
  // bytes before the type: a scan one byte off there reads the type, the data or the array
  // after as structure, or skips it, and the deep case then overflows the decoder's stack.
  // The data bytes are array headers, so that reading them as structure counts levels.
  const setExt: Record<string, (length: number) => number[]> = {
    'ext 8': (length) => [0xc7, length, 0x73],
    'ext 16': (length) => [0xc8, length >> 8, length & 0xff, 0x73],
    'ext 32': (length) => [0xc9, 0, 0, length >> 8, length & 0xff, 0x73],
  };
  for (const [format, head] of Object.entries(setExt)) {
    for (const length of [0, 1, 3, format === 'ext 8' ? 255 : 300]) {
      it(`the Set extension as ${format} with ${length} bytes of data nests its value a level deeper, to the limit and over it`, () => {
        const set = [...head(length), ...new Array<number>(length).fill(0x91)];
        const deep = (pairs: number, innermost: number): Uint8Array => frame(...Array.from({ length: pairs }, () => [...set, 0x91]), innermost);
        const atLimit = codecs.msgpack.decode(deep(MAX / 2, 0xc0));
        // A Set is made of the array after it: one Set per pair, two levels of the decoder's each.
        let sets = 0;
        for (let v: unknown = atLimit; v instanceof Set; v = [...v][0]) sets++;
        expect(sets).toBe(MAX / 2);
        expect(refusal(() => codecs.msgpack.decode(deep(MAX / 2, 0x90))).kind).toBe('FRAME_TOO_DEEP');
        // Deep enough to overflow the decoder's stack (a few thousand levels do), in at most ~3 MB.
        expect(refusal(() => codecs.msgpack.decode(deep(Math.min(100_000, Math.floor(3e6 / set.length)), 0xc0))).kind).toBe('FRAME_TOO_DEEP');
      });
    }
  }

  it("msgpackr's record definitions and string bundles, which COD-1 rules out, are undecodable", () => {
    // A record definition (fixext 1, type 0x72) of one key "a", then a record of it.
    expect(refusal(() => codecs.msgpack.decode(frame(0xd4, 0x72, 0x40, 0x91, 0xa1, 0x61, 0x01))).kind).toBe('UNDECODABLE');
    // A string bundle (fixext 4, type 0x62).
    expect(refusal(() => codecs.msgpack.decode(frame(0xd6, 0x62, 0x00, 0x00, 0x00, 0x04, 0xc0))).kind).toBe('UNDECODABLE');
  });

  it('a header cut short is left to the decoder, which refuses it as undecodable', () => {
    for (const bytes of [[0xdc], [0xdc, 0x00], [0xdf, 0x00, 0x00, 0x00], [0xc7, 0x01], [0xc4, 0x05, 0x01]]) {
      expect(refusal(() => codecs.msgpack.decode(frame(bytes))).kind).toBe('UNDECODABLE');
    }
  });
});
