import { describe, expect, it } from 'vitest';
import { BridgeMux, BridgeMuxError, MUX_HEADER_BYTES, MUX_KIND } from '../../src/webtransport/index.js';

// The last resort of src/webtransport/bridge-mux.ts (issue 31 #2): whatever is thrown while a
// peer's frames are read (here, by the owner's own callback) ends that session, never the
// process: before, anything but a BridgeMuxError was thrown on, out of the socket's 'data'.
function frame(kind: number, id: number): Uint8Array {
  const out = new Uint8Array(MUX_HEADER_BYTES);
  out[0] = kind;
  new DataView(out.buffer).setUint32(1, id);
  return out;
}

describe('the bridge mux ends the session on any error while reading its peer', () => {
  it('an owner callback that throws a TypeError ends the session as a violation; nothing is thrown to the socket', () => {
    const violations: BridgeMuxError[] = [];
    const mux = new BridgeMux({
      opens: false,
      write: () => undefined,
      onStream: () => {
        throw new TypeError('a bug of ours');
      },
      onViolation: (error) => violations.push(error),
    });
    expect(() => mux.receive(frame(MUX_KIND.open, 0))).not.toThrow();
    expect(mux.isEnded).toBe(true);
    expect(violations.map((e) => e.message)).toEqual([expect.stringContaining('a bug of ours')]);
    expect(violations[0]).toBeInstanceOf(BridgeMuxError);
    // Later bytes are dropped.
    expect(() => mux.receive(frame(MUX_KIND.open, 1))).not.toThrow();
    expect(violations).toHaveLength(1);
  });
});
