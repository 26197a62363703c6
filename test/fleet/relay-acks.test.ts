import { describe, expect, it } from 'vitest';
import { RelayAcks } from '../../src/fleet/relay-acks.js';

describe("RelayAcks: a gateway acknowledges to the agent only what its own caller has", () => {
  it('limits what may be acknowledged to what the caller acknowledged, and asks for more as that rises', () => {
    const acks = new RelayAcks(2);
    let asked = 0;
    acks.watch(() => asked++);
    expect(acks.limit(10)).toBe(2);
    acks.raise(1);
    expect(asked).toBe(0);
    acks.raise(5);
    expect(asked).toBe(1);
    expect(acks.limit(10)).toBe(5);
    expect(acks.limit(3)).toBe(3);
  });

  it('lets the agent forget the ended call only once the caller is done with it, at once if it already is', () => {
    const acks = new RelayAcks();
    const forgotten: string[] = [];
    acks.ended(() => forgotten.push('first'));
    expect(forgotten).toEqual([]);
    acks.release();
    expect(forgotten).toEqual(['first']);
    acks.ended(() => forgotten.push('after'));
    expect(forgotten).toEqual(['first', 'after']);
  });
});
