import { describe, expect, it } from 'vitest';
import { encodeFrame, FrameDecoder, limits, ProtocolError } from '../../src/protocol/index.js';

const prefix = (n: number): Uint8Array => {
  const b = new Uint8Array(4);
  new DataView(b.buffer).setUint32(0, n, false);
  return b;
};

describe('FrameDecoder', () => {
  it('rejects an oversized declared length from the 4-byte prefix alone, holding no body', () => {
    const decoder = new FrameDecoder(1024);
    let thrown: unknown;
    try {
      decoder.push(prefix(1025));
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(ProtocolError);
    expect((thrown as ProtocolError).kind).toBe('FRAME_TOO_LARGE');
    // Only the prefix was ever read: nothing of a body is held.
    expect(decoder.bufferedBytes).toBeLessThanOrEqual(4);
  });

  it('rejects the default maximum + 1 as soon as the prefix completes, even byte by byte', () => {
    const decoder = new FrameDecoder();
    const p = prefix(limits.maxFrameBytes + 1);
    decoder.push(p.subarray(0, 1));
    decoder.push(p.subarray(1, 2));
    decoder.push(p.subarray(2, 3));
    expect(() => decoder.push(p.subarray(3, 4))).toThrowError(/exceeds maxFrameBytes/);
  });

  it('does not keep body bytes that arrive in the same chunk as a bad prefix', () => {
    const decoder = new FrameDecoder(16);
    const bytes = new Uint8Array(4 + 100);
    bytes.set(prefix(100));
    expect(() => decoder.push(bytes)).toThrow(ProtocolError);
    expect(decoder.bufferedBytes).toBe(4);
  });

  it('accepts exactly maxFrameBytes', () => {
    const decoder = new FrameDecoder(8);
    const frames = decoder.push(encodeFrame(new Uint8Array(8).fill(7), 8));
    expect(frames).toHaveLength(1);
    expect(Array.from(frames[0]!)).toEqual(Array(8).fill(7));
  });

  it('rejects length 0', () => {
    expect(() => new FrameDecoder().push(prefix(0))).toThrowError(/length 0/);
  });

  it('reports EOF inside a frame at end()', () => {
    const decoder = new FrameDecoder();
    decoder.push(encodeFrame(new Uint8Array([1, 2, 3])).subarray(0, 5));
    expect(() => decoder.end()).toThrowError(/ended inside a frame/);
  });

  it('refuses to be used after a failure', () => {
    const decoder = new FrameDecoder();
    expect(() => decoder.push(prefix(0))).toThrow(ProtocolError);
    expect(() => decoder.push(encodeFrame(new Uint8Array([1])))).toThrow(ProtocolError);
  });

  it('does not pin the caller chunk: the frame is a copy', () => {
    const decoder = new FrameDecoder();
    const chunk = encodeFrame(new Uint8Array([9, 9]));
    const [frame] = decoder.push(chunk);
    chunk.fill(0);
    expect(Array.from(frame!)).toEqual([9, 9]);
  });

  it('encodeFrame refuses empty and oversized bodies', () => {
    expect(() => encodeFrame(new Uint8Array(0))).toThrowError(/length 0/);
    expect(() => encodeFrame(new Uint8Array(9), 8)).toThrowError(/exceeds/);
  });
});
