import { describe, expect, it } from 'vitest';
import { codecs, decodeEnvelope, envelopes, outputFrameEncoder } from '../../src/protocol/index.js';

const ids = ['a', 'x'.repeat(31), 'x'.repeat(32), 'é'.repeat(64), 'c7f0a9e2-1b3c-4d5e-8f90-123456789abc', 'y'.repeat(300)];
const outputs: unknown[] = [
  null,
  0,
  -1.5,
  'text',
  'ü'.repeat(40),
  true,
  [1, 'two', null],
  { data: new Uint8Array(100).fill(7) },
  { stream: 'stdout', data: new Uint8Array(70_000).fill(1) },
  { exitCode: 0, terminal: true },
  { nested: { deep: [{ a: 1 }, { b: new Uint8Array([1, 2, 3]) }] } },
];

describe('outputFrameEncoder', () => {
  for (const codec of Object.values(codecs)) {
    it(`${codec.name}: each frame is byte for byte the whole envelope's encoding`, () => {
      for (const id of ids) {
        const encode = outputFrameEncoder(codec, id);
        for (const output of outputs) {
          const frame = encode(output);
          expect(Buffer.from(frame).equals(Buffer.from(codec.encode(envelopes.responded(id, output))))).toBe(true);
        }
      }
    });
  }

  it('msgpack: frames encoded one after another stay intact (none shares bytes with the next)', () => {
    const encode = outputFrameEncoder(codecs.msgpack, 'call-1');
    const frames = Array.from({ length: 200 }, (_, i) => encode({ i, data: new Uint8Array(i).fill(i) }));
    frames.forEach((frame, i) => {
      const parsed = decodeEnvelope(codecs.msgpack, frame);
      if (parsed.kind !== 'event' || parsed.envelope.type !== 'call.responded') throw new Error(`frame ${i}: ${parsed.kind}`);
      expect(parsed.envelope.id).toBe('call-1');
      const output = parsed.envelope.payload.output as { i: number; data: Uint8Array };
      expect(output.i).toBe(i);
      expect(Buffer.from(output.data).equals(Buffer.alloc(i, i))).toBe(true);
    });
  });
});
