import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { fromBase64, toBase64 } from '../../src/protocol/base64.js';

describe('base64 of the JSON codec ({"$base64"} bytes, spec §5.3)', () => {
  it("encodes every length from 0 to 300 and 1 MiB exactly as Node's own base64, and decodes back", () => {
    for (const n of [...Array.from({ length: 301 }, (_, i) => i), 1024 * 1024 + 1]) {
      const bytes = new Uint8Array(randomBytes(n));
      const text = toBase64(bytes);
      expect(text).toBe(Buffer.from(bytes).toString('base64'));
      expect(fromBase64(text)).toEqual(bytes);
    }
  });

  it('encodes every byte value in every position of a triple', () => {
    const bytes = new Uint8Array(256 * 3).map((_, i) => (i % 3 === 0 ? i / 3 : i % 3 === 1 ? 255 - ((i - 1) / 3) : ((i - 2) / 3) ^ 0x5a));
    expect(toBase64(bytes)).toBe(Buffer.from(bytes).toString('base64'));
  });

  it('refuses text that is not base64', () => {
    expect(() => fromBase64('not base64!')).toThrow();
  });
});
