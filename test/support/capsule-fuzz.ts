import { envelopes } from '../../src/protocol/index.js';
import { capsule, CAPSULE, requestBytes, streamCapsule, varint } from './raw-wt-h2.js';

/** mulberry32: a small seeded PRNG, so a failing sequence can be made again from its seed. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface Rng {
  (): number;
}

const int = (rng: Rng, n: number): number => Math.floor(rng() * n);
const pick = <T>(rng: Rng, items: readonly T[]): T => items[int(rng, items.length)]!;
const bytes = (rng: Rng, n: number): Buffer => {
  const out = Buffer.alloc(n);
  for (let i = 0; i < n; i++) out[i] = int(rng, 256);
  return out;
};

/** Values that sit on the edges of what a varint or a window holds. */
const EDGES = [0n, 1n, 63n, 64n, 16383n, 16384n, 2n ** 30n - 1n, 2n ** 30n, 2n ** 32n, 2n ** 62n - 1n];
const value = (rng: Rng): bigint => (rng() < 0.5 ? pick(rng, EDGES) : BigInt(int(rng, 1 << 20)));
/** Stream ids in a small range, so that both parities, both directions, reuse and reset ids all come up. */
const streamId = (rng: Rng): bigint => (rng() < 0.9 ? BigInt(int(rng, 48)) : value(rng));
const TYPES = Object.values(CAPSULE);

/** One capsule, right or wrong. */
function oneCapsule(rng: Rng): Buffer {
  switch (int(rng, 10)) {
    case 0: {
      const id = BigInt(4 * int(rng, 8) + 1); // a call on a stream the peer may open
      return streamCapsule(id, requestBytes(envelopes.requested(`f${int(rng, 1000)}`, { operationId: 'test/echo', input: { text: 'fuzz' } })), rng() < 0.7);
    }
    case 1:
    case 2:
      return streamCapsule(streamId(rng), bytes(rng, int(rng, 200)), rng() < 0.3);
    case 3:
      return capsule(pick(rng, [CAPSULE.resetStream, CAPSULE.stopSending]), Buffer.concat([varint(streamId(rng)), varint(value(rng))]));
    case 4:
      return capsule(pick(rng, [CAPSULE.maxStreamData, CAPSULE.streamDataBlocked]), Buffer.concat([varint(streamId(rng)), varint(value(rng))]));
    case 5:
      return capsule(pick(rng, [CAPSULE.maxData, CAPSULE.maxStreamsBidi, CAPSULE.maxStreamsUni, CAPSULE.dataBlocked, CAPSULE.streamsBlockedBidi, CAPSULE.streamsBlockedUni]), varint(value(rng)));
    case 6:
      return capsule(CAPSULE.closeSession, bytes(rng, int(rng, 12)));
    case 7:
      return capsule(pick(rng, [CAPSULE.datagram, CAPSULE.padding, CAPSULE.drainSession, int(rng, 1 << 20)]), bytes(rng, int(rng, rng() < 0.05 ? 40_000 : 300)));
    case 8:
      // A length prefix that lies: short, long, or past any window.
      return capsule(pick(rng, TYPES), bytes(rng, int(rng, 40)), pick(rng, [0n, 1n, BigInt(int(rng, 100)), value(rng)]));
    default:
      return bytes(rng, int(rng, 24));
  }
}

/** A damaged sequence of capsules for one session, cut into the writes that carry it. */
export function capsuleSequence(rng: Rng): Buffer[] {
  const parts: Buffer[] = [];
  for (let n = 1 + int(rng, 8); n > 0; n--) parts.push(oneCapsule(rng));
  let all = Buffer.concat(parts);
  // Flip a few bytes, or cut the end off.
  if (rng() < 0.3 && all.byteLength > 0) {
    for (let k = int(rng, 4); k >= 0; k--) {
      const at = int(rng, all.byteLength);
      all[at] = all[at]! ^ (1 << int(rng, 8));
    }
  }
  if (rng() < 0.2) all = all.subarray(0, int(rng, all.byteLength));
  const writes: Buffer[] = [];
  for (let at = 0; at < all.byteLength; ) {
    const n = 1 + int(rng, rng() < 0.5 ? 16 : 4096);
    writes.push(all.subarray(at, at + n));
    at += n;
  }
  return writes;
}
