import { describe, expect, it } from 'vitest';
import { DockerDemuxer, mergeAdjacent, type DemuxedFrame } from '../../src/operations/docker/demux.js';

const frame = (type: 1 | 2, text: string): Uint8Array => {
  const body = new TextEncoder().encode(text);
  const out = new Uint8Array(8 + body.byteLength);
  out[0] = type;
  new DataView(out.buffer).setUint32(4, body.byteLength, false);
  out.set(body, 8);
  return out;
};

const joined = (frames: DemuxedFrame[]): [string, string][] => {
  // Per stream, concatenated: what a reader of each stream sees.
  const per = { stdout: [] as Uint8Array[], stderr: [] as Uint8Array[] };
  for (const f of frames) per[f.stream].push(f.data);
  return [['stdout', Buffer.concat(per.stdout).toString('utf8')], ['stderr', Buffer.concat(per.stderr).toString('utf8')]];
};

describe("Docker's multiplexed stream", () => {
  const input = Buffer.concat([frame(1, 'out1 '), frame(2, 'err1 '), frame(1, 'out2 '), frame(1, 'out3 é😀'), frame(2, 'err2')]);

  it('any chunking yields the same bytes per stream, and ends clean only on a frame boundary', () => {
    for (const size of [1, 2, 3, 7, 8, 9, 64]) {
      const demux = new DockerDemuxer();
      const frames: DemuxedFrame[] = [];
      for (let at = 0; at < input.byteLength; at += size) frames.push(...demux.push(input.subarray(at, at + size)));
      expect(joined(frames), `chunks of ${size}`).toEqual([['stdout', 'out1 out2 out3 é😀'], ['stderr', 'err1 err2']]);
      expect(demux.clean).toBe(true);
    }
    const cut = new DockerDemuxer();
    cut.push(input.subarray(0, 10));
    expect(cut.clean).toBe(false);
  });

  it('rejects a stream type it does not know', () => {
    expect(() => new DockerDemuxer().push(new Uint8Array([9, 0, 0, 0, 0, 0, 0, 1, 65]))).toThrow(/unexpected stream type 9/);
  });

  it('mergeAdjacent joins only neighbours of one stream, keeping the order between streams', () => {
    const frames = new DockerDemuxer().push(input);
    const merged = mergeAdjacent(frames);
    expect(merged.map((f) => [f.stream, new TextDecoder().decode(f.data)])).toEqual([
      ['stdout', 'out1 '],
      ['stderr', 'err1 '],
      ['stdout', 'out2 out3 é😀'],
      ['stderr', 'err2'],
    ]);
  });
});
