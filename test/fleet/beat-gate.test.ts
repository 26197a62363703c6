import { describe, expect, it } from 'vitest';
import { beatSchema } from '../../src/fleet/beat.js';
import { BEAT_BYTES_PER_SECOND, BeatGate, BEATS_PER_SECOND, MAX_BEAT_BYTES, MAX_TABLE_ENTRIES } from '../../src/fleet/beat-gate.js';

/** What a gateway reads of a host's heartbeats (docs/fleet.md "Limits"), weighed before a byte is parsed. */
describe('the gateway\'s bounds on a host\'s heartbeats', () => {
  it('a beat over MAX_BEAT_BYTES is dropped even from a host that sent nothing before; one of exactly that size is read', () => {
    const gate = new BeatGate();
    expect(gate.admit('b', MAX_BEAT_BYTES + 1, 0)).toBe(false);
    expect(gate.admit('a', MAX_BEAT_BYTES, 0)).toBe(true);
    expect(gate.takeDropped('b')).toBe(1);
  });

  it('a host over its rate is dropped, cheaply, and another host is not: an honest beat a second always passes', () => {
    const gate = new BeatGate();
    let admitted = 0;
    // 1,000 small beats in one second from b: the burst passes, the rest is dropped.
    for (let i = 0; i < 1000; i++) if (gate.admit('b', 100, i)) admitted++;
    expect(admitted).toBeLessThanOrEqual(10 + BEATS_PER_SECOND);
    for (let s = 0; s < 60; s++) expect(gate.admit('a', 100, s * 1000)).toBe(true);
  });

  it('1 MB tables as fast as they come: about one a second is read, whatever the count sent', () => {
    const gate = new BeatGate();
    let admitted = 0;
    // 56 a second for 20 s, the review's flood.
    for (let i = 0; i < 1120; i++) if (gate.admit('b', 1_000_000, Math.floor((i * 1000) / 56))) admitted++;
    // A burst of 2 MiB, then 1 MiB a second: some 23 of the 1,120.
    expect(admitted).toBeLessThanOrEqual(1 + (2 * 1024 * 1024 + 20 * BEAT_BYTES_PER_SECOND) / 1_000_000);
    expect(admitted).toBeGreaterThan(10);
  });

  it(`a table of more than ${MAX_TABLE_ENTRIES} containers is not a beat`, () => {
    const containers = (n: number) => Array.from({ length: n }, (_, i) => ({ id: `c${i}`, names: [`n${i}`] }));
    expect(beatSchema.safeParse({ startedAt: 1, version: 1, engine: 'up', containers: containers(MAX_TABLE_ENTRIES) }).success).toBe(true);
    expect(beatSchema.safeParse({ startedAt: 1, version: 1, engine: 'up', containers: containers(MAX_TABLE_ENTRIES + 1) }).success).toBe(false);
  });
});
