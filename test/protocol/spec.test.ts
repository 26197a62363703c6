import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { eventTypes, limits, protocolCodes } from '../../src/protocol/index.js';
import { loadVectors } from '../support/vectors.js';

const spec = readFileSync(new URL('../../spec/PROTOCOL.md', import.meta.url), 'utf8');
const section = (title: string): string => {
  const start = spec.indexOf(`## ${title}`);
  const end = spec.indexOf('\n## ', start + 1);
  return spec.slice(start, end === -1 ? undefined : end);
};
const specCodes = [...section('6. Error codes').matchAll(/^\| `([A-Z_]+)` \| (yes|no) \| (.+) \|$/gm)].map((m) => ({
  code: m[1]!,
  retryable: m[2] === 'yes',
  meaning: m[3]!,
}));

describe('spec/PROTOCOL.md and the code agree', () => {
  it('the code table in §6 is exactly the table in src/protocol/codes.ts', () => {
    expect(specCodes.map((c) => c.code).sort()).toEqual(Object.keys(protocolCodes).sort());
    for (const c of specCodes) {
      const info = protocolCodes[c.code as keyof typeof protocolCodes];
      expect({ code: c.code, retryable: c.retryable, meaning: c.meaning }).toEqual({ code: c.code, retryable: info.retryable, meaning: info.meaning });
    }
  });

  it('the limits in §9 are the defaults in src/protocol/limits.ts', () => {
    const table = section('9. Limits');
    for (const name of ['maxFrameBytes', 'maxInputBytes', 'maxCallIdBytes', 'maxNestingDepth', 'maxCallsInFlight', 'maxBufferedBytesPerCall', 'maxDeadlineMs'] as const) {
      const row = new RegExp(`^\\| \`${name}\` \\| ([\\d,]+)`, 'm').exec(table);
      expect(row, name).not.toBeNull();
      expect(Number(row![1]!.replaceAll(',', '')), name).toBe(limits[name]);
    }
  });

  for (const codec of ['msgpack', 'json'] as const) {
    const frames = loadVectors(codec).valid.map((v) => v.frame as { type: string; payload: { code?: string } });
    it(`${codec} vectors hold every frame type`, () => {
      expect(new Set(frames.map((f) => f.type))).toEqual(new Set(eventTypes));
    });
    it(`${codec} vectors hold every error code of the spec`, () => {
      const seen = new Set(frames.filter((f) => f.type === 'call.error').map((f) => f.payload.code));
      for (const c of specCodes) expect(seen, c.code).toContain(c.code);
    });
  }
});
