import { describe, expect, it } from 'vitest';
import { codecs, decodeEnvelope, FrameDecoder, ProtocolError, type CodecName } from '../../src/protocol/index.js';
import { chunk, fromHex, jsonSafe, loadVectors } from '../support/vectors.js';

function decodeAll(codecName: CodecName, chunks: Uint8Array[]): unknown[] {
  const decoder = new FrameDecoder();
  const out: unknown[] = [];
  for (const c of chunks) {
    for (const body of decoder.push(c)) {
      const parsed = decodeEnvelope(codecs[codecName], body);
      if (parsed.kind === 'invalid') throw parsed.error;
      if (parsed.kind === 'event') out.push(jsonSafe(parsed.envelope));
    }
  }
  decoder.end();
  return out;
}

function failure(codecName: CodecName, chunks: Uint8Array[]): ProtocolError {
  try {
    decodeAll(codecName, chunks);
  } catch (error) {
    if (error instanceof ProtocolError) return error;
    throw error;
  }
  throw new Error('expected a ProtocolError');
}

for (const codecName of ['msgpack', 'json'] as const) {
  const file = loadVectors(codecName);
  describe(`${codecName} vectors`, () => {
    const splits: [string, (i: number) => number][] = [
      ['whole', () => Number.MAX_SAFE_INTEGER],
      ['1-byte chunks', () => 1],
      ['2-byte chunks', () => 2],
    ];
    for (const v of file.valid) {
      for (const [how, sizes] of splits) {
        it(`valid: ${v.name} (${how})`, () => {
          expect(decodeAll(codecName, chunk(fromHex(v.hex), sizes))).toEqual([v.frame]);
        });
      }
      it(`valid: ${v.name} re-encodes to the same bytes`, () => {
        const body = fromHex(v.hex).subarray(4);
        const parsed = decodeEnvelope(codecs[codecName], body);
        expect(parsed.kind).toBe('event');
        if (parsed.kind === 'event') expect(Buffer.from(codecs[codecName].encode(parsed.envelope)).toString('hex')).toBe(body.length ? Buffer.from(body).toString('hex') : '');
      });
    }
    for (const v of file.invalid) {
      for (const [how, sizes] of splits) {
        it(`invalid: ${v.name} (${how})`, () => {
          const error = failure(codecName, chunk(fromHex(v.hex), sizes));
          expect(error.kind).toBe(v.error.kind);
          if (v.error.field !== undefined) expect(error.field).toBe(v.error.field);
        });
      }
    }

    it('the concatenation of all valid vectors in random chunk sizes yields every frame in order', () => {
      const all = Buffer.concat(file.valid.map((v) => fromHex(v.hex)));
      for (let round = 0; round < 50; round++) {
        const frames = decodeAll(codecName, chunk(all, () => 1 + Math.floor(Math.random() * 97)));
        expect(frames).toEqual(file.valid.map((v) => v.frame));
      }
    });
  });
}
