import { describe, expect, it } from 'vitest';
import { chunkBatcher, writeBatcher } from '../../src/io/index.js';
import { encodeFrame, FrameDecoder } from '../../src/protocol/index.js';

/** A socket that records, for each write, whether it was corked (held back) at the time. */
function fakeSocket() {
  const socket = {
    depth: 0,
    corks: 0,
    writes: [] as { size: number; held: boolean }[],
    cork() {
      socket.depth++;
      socket.corks++;
    },
    uncork() {
      socket.depth--;
    },
  };
  return socket;
}

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('writeBatcher', () => {
  it('holds the writes of one turn back together and lets them go at the end of the turn', async () => {
    const socket = fakeSocket();
    const batched = writeBatcher(socket, { firstBytes: 1024, maxBytes: 1024 });
    for (let i = 0; i < 5; i++) batched(100, () => socket.writes.push({ size: 100, held: socket.depth > 0 }));
    expect(socket.writes.every((w) => w.held)).toBe(true);
    expect(socket.corks).toBe(1);
    expect(socket.depth).toBe(1);
    await turn();
    expect(socket.depth).toBe(0);
    // The next turn's writes are a new batch.
    batched(100, () => socket.writes.push({ size: 100, held: socket.depth > 0 }));
    expect(socket.corks).toBe(2);
    await turn();
    expect(socket.depth).toBe(0);
  });

  it('lets a batch go as soon as it reaches its bound, not at the end of a long turn', async () => {
    const socket = fakeSocket();
    const batched = writeBatcher(socket, { firstBytes: 1000, maxBytes: 1000 });
    const depths: number[] = [];
    for (let i = 0; i < 10; i++) batched(400, () => depths.push(socket.depth));
    // 400, 800, 1200 → released after the third write; so every three writes a batch.
    expect(socket.corks).toBe(4);
    expect(depths.every((d) => d === 1)).toBe(true);
    expect(socket.depth).toBe(1); // the tenth write's batch waits for the end of the turn
    await turn();
    expect(socket.depth).toBe(0);
  });

  it('lets the first batch of a turn go small, doubles the bound after it, and starts small again next turn', async () => {
    const socket = fakeSocket();
    const batched = writeBatcher(socket, { firstBytes: 100, maxBytes: 400 });
    const released: number[] = [];
    let held = 0;
    const writeOne = (): void => {
      const before = socket.corks;
      batched(100, () => undefined);
      held += 100;
      if (socket.depth === 0) {
        released.push(held);
        held = 0;
      }
      expect(socket.corks - before).toBeLessThanOrEqual(1);
    };
    for (let i = 0; i < 17; i++) writeOne();
    // Batches of 100, 200, 400, then 400 each: the peer gets the first frame at once.
    expect(released).toEqual([100, 200, 400, 400, 400]);
    expect(held).toBe(200); // the rest waits for the end of the turn
    expect(socket.depth).toBe(1);
    await turn();
    expect(socket.depth).toBe(0);
    released.length = 0;
    held = 0;
    for (let i = 0; i < 3; i++) writeOne();
    expect(released).toEqual([100, 200]);
    await turn();
  });

  it('returns what the write returns and keeps the count when a write throws', async () => {
    const socket = fakeSocket();
    const batched = writeBatcher(socket, { firstBytes: 1000, maxBytes: 1000 });
    expect(batched(10, () => 'sent')).toBe('sent');
    expect(() =>
      batched(2000, () => {
        throw new Error('socket gone');
      }),
    ).toThrow('socket gone');
    expect(socket.depth).toBe(0); // over its bound all the same: released
    await turn();
    expect(socket.depth).toBe(0);
  });
});

describe('chunkBatcher', () => {
  const bytes = (n: number, fill: number): Uint8Array => new Uint8Array(n).fill(fill);

  it('joins the frames of one turn into one chunk, in order, and settles each with it', async () => {
    const chunks: Uint8Array[] = [];
    const batch = chunkBatcher(async (chunk) => void chunks.push(chunk), { maxBytes: 1000 });
    const settled: number[] = [];
    const writes = [1, 2, 3].map((n) => batch.write(bytes(10, n)).then(() => settled.push(n)));
    expect(chunks).toHaveLength(0);
    await Promise.all(writes);
    expect(chunks).toHaveLength(1);
    expect([...chunks[0]!]).toEqual([...bytes(10, 1), ...bytes(10, 2), ...bytes(10, 3)]);
    expect(settled).toEqual([1, 2, 3]);
  });

  it('writes a chunk once it reaches its bound, and a large frame alone and uncopied', async () => {
    const chunks: Uint8Array[] = [];
    const batch = chunkBatcher(async (chunk) => void chunks.push(chunk), { maxBytes: 100 });
    const large = bytes(500, 9);
    const writes = [batch.write(bytes(60, 1)), batch.write(bytes(60, 2)), batch.write(bytes(10, 3)), batch.write(large), batch.write(bytes(10, 4))];
    expect(chunks.map((c) => c.byteLength)).toEqual([120, 10, 500]); // at the bound; then what was before the large frame; the large one
    expect(chunks[2]).toBe(large);
    await Promise.all(writes);
    expect(chunks.map((c) => c.byteLength)).toEqual([120, 10, 500, 10]);
  });

  it('rejects the frames of a failed write, and drops what was not written yet', async () => {
    const batch = chunkBatcher(() => Promise.reject(new Error('stream gone')), { maxBytes: 1000 });
    await expect(batch.write(bytes(10, 1))).rejects.toThrow('stream gone');
    const writes: string[] = [];
    const held = chunkBatcher(async () => void writes.push('written'), { maxBytes: 1000 });
    const pending = held.write(bytes(10, 1));
    held.drop(new Error('reset'));
    await expect(pending).rejects.toThrow('reset');
    await turn();
    expect(writes).toEqual([]);
  });

  it('length-prefixed: each frame behind its length in the joined chunk, and a large frame as its prefix then itself, uncopied', async () => {
    const chunks: Uint8Array[] = [];
    const batch = chunkBatcher(async (chunk) => void chunks.push(chunk), { maxBytes: 100, lengthPrefixed: true });
    const large = bytes(300, 9);
    const frames = [bytes(10, 1), bytes(20, 2), large, bytes(5, 3)];
    await Promise.all(frames.map((f) => batch.write(f)));
    // The two small frames joined (4 + 10 + 4 + 20), the large one's prefix, the large one itself, the last frame framed.
    expect(chunks.map((c) => c.byteLength)).toEqual([38, 4, 300, 9]);
    expect(chunks[2]).toBe(large);
    const decoder = new FrameDecoder();
    const decoded = chunks.flatMap((chunk) => decoder.push(chunk));
    expect(decoded.map((body) => [...body])).toEqual(frames.map((f) => [...f]));
    // The same bytes as framing each frame on its own.
    expect(Buffer.concat(chunks).equals(Buffer.concat(frames.map((f) => encodeFrame(f))))).toBe(true);
  });
});
