import { describe, expect, it } from 'vitest';
import { ASSEMBLY_MS, MAX_ASSEMBLING_BYTES, MAX_LABEL_BYTES_PER_CONTAINER, MAX_LABEL_BYTES_PER_HOST, MAX_TABLE_BYTES, MAX_TABLE_ENTRIES } from '../../src/fleet/beat-gate.js';
import { beatSchema, type Beat, type RoutedContainer } from '../../src/fleet/beat.js';
import { HostTable } from '../../src/fleet/host-table.js';
import { tableMessages, tableOf } from '../../src/fleet/table-announce.js';
import { TableParts, type Offered } from '../../src/fleet/table-parts.js';

const containers = (from: number, count: number): RoutedContainer[] => Array.from({ length: count }, (_, i) => ({ id: `id${from + i}`, names: [`c${from + i}`] }));
const part = (version: number, index: number, parts: number, rows: RoutedContainer[], startedAt = 1): Beat => ({ startedAt, version, engine: 'up', part: index, parts, containers: rows });
const ids = (offered: Offered): string[] => (offered.kind === 'table' ? offered.containers.map((c) => c.id) : []);

describe('a host table in parts: applied whole, within bounds', () => {
  it('parts out of order make one table in part order; a duplicate is ignored; nothing is applied before the last', () => {
    const parts = new TableParts();
    expect(parts.offer('a', part(3, 2, 3, containers(4, 2)), 100).kind).toBe('waiting');
    expect(parts.offer('a', part(3, 0, 3, containers(0, 2)), 100).kind).toBe('waiting');
    expect(parts.offer('a', part(3, 0, 3, containers(0, 2)), 100).kind).toBe('waiting');
    expect(parts.bytes).toBe(200);
    expect(ids(parts.offer('a', part(3, 1, 3, containers(2, 2)), 100))).toEqual(['id0', 'id1', 'id2', 'id3', 'id4', 'id5']);
    expect(parts.bytes).toBe(0);
  });

  it('a missing part leaves the last complete table routing: a partial one never replaces it', () => {
    const parts = new TableParts();
    const table = new HostTable({ gone: () => undefined, ask: () => undefined });
    try {
      const hear = (beat: Beat): void => {
        const offered = parts.offer('a', beat, 10);
        const { containers: _, part: __, parts: ___, ...heartbeat } = beat;
        table.heard('a', offered.kind === 'table' ? { ...heartbeat, containers: offered.containers } : heartbeat);
      };
      hear(part(1, 0, 2, [{ id: 'old', names: ['web'] }]));
      hear(part(1, 1, 2, [{ id: 'old2', names: ['db'] }]));
      expect(table.route('web')).toEqual({ host: 'a', ref: 'web' });
      hear(part(2, 0, 2, [{ id: 'new', names: ['api'] }]));
      expect(table.route('web')).toEqual({ host: 'a', ref: 'web' });
      expect(table.route('api')).toMatchObject({ code: 'CONTAINER_NOT_FOUND' });
    } finally {
      table.close();
    }
  });

  it('a newer generation replaces an incomplete older one; a late part of the older is refused', () => {
    const parts = new TableParts();
    expect(parts.offer('a', part(1, 0, 2, containers(0, 1)), 50).kind).toBe('waiting');
    expect(parts.offer('a', part(2, 1, 2, containers(10, 1)), 70).kind).toBe('waiting');
    expect(parts.bytes).toBe(70);
    expect(parts.offer('a', part(1, 1, 2, containers(1, 1)), 50).kind).toBe('refused');
    expect(ids(parts.offer('a', part(2, 0, 2, containers(9, 1)), 70))).toEqual(['id9', 'id10']);
    // A restarted agent's parts start a table of their own, whatever its version.
    expect(parts.offer('a', part(5, 0, 2, containers(0, 1)), 10).kind).toBe('waiting');
    expect(ids(parts.offer('a', { startedAt: 2, version: 1, engine: 'up', containers: containers(7, 1) }, 10))).toEqual(['id7']);
    expect(parts.bytes).toBe(0);
  });

  it('a part that says another count of parts, or a number past them, is refused', () => {
    const parts = new TableParts();
    parts.offer('a', part(1, 0, 3, containers(0, 1)), 10);
    expect(parts.offer('a', part(1, 1, 2, containers(1, 1)), 10).kind).toBe('refused');
    expect(parts.offer('b', { ...part(1, 0, 2, []), part: 2 }, 10).kind).toBe('refused');
  });

  it('a table over its containers, bytes or labels is dropped whole, and its later parts with it', () => {
    const parts = new TableParts();
    const half = Math.ceil(MAX_TABLE_ENTRIES / 2) + 1;
    expect(parts.offer('a', part(1, 0, 3, containers(0, half)), 10).kind).toBe('waiting');
    expect(parts.offer('a', part(1, 1, 3, containers(half, half)), 10)).toMatchObject({ kind: 'refused', why: expect.stringMatching(/containers/) as unknown });
    expect(parts.offer('a', part(1, 2, 3, []), 10).kind).toBe('refused');
    expect(parts.bytes).toBe(0);
    expect(parts.offer('b', part(1, 0, 2, []), MAX_TABLE_BYTES).kind).toBe('waiting');
    expect(parts.offer('b', part(1, 1, 2, []), 1)).toMatchObject({ kind: 'refused', why: expect.stringMatching(/bytes/) as unknown });
    const labelled = (n: number): RoutedContainer[] => Array.from({ length: n }, (_, i) => ({ id: `l${i}`, names: [], labels: { k: 'v'.repeat(MAX_LABEL_BYTES_PER_CONTAINER - 1) } }));
    const perHost = Math.floor(MAX_LABEL_BYTES_PER_HOST / MAX_LABEL_BYTES_PER_CONTAINER);
    expect(parts.offer('c', part(1, 0, 2, labelled(perHost)), 10).kind).toBe('waiting');
    expect(parts.offer('c', part(1, 1, 2, labelled(1)), 10)).toMatchObject({ kind: 'refused', why: expect.stringMatching(/labels/) as unknown });
    // A whole table of one message is held to the host's label bound too.
    expect(parts.offer('d', { startedAt: 1, version: 1, engine: 'up', containers: labelled(perHost + 1) }, 10).kind).toBe('refused');
    expect(parts.offer('d', { startedAt: 1, version: 1, engine: 'up', containers: labelled(perHost) }, 10).kind).toBe('table');
  });

  it('tables never completed hold at most the bound for all hosts; a host holding as much as the others evicts none of them; one over its time is evicted to make room', () => {
    const parts = new TableParts();
    const share = MAX_ASSEMBLING_BYTES / 8;
    for (let h = 0; h < 8; h++) expect(parts.offer(`h${h}`, part(1, 0, 3, []), share, 0).kind).toBe('waiting');
    expect(parts.bytes).toBe(MAX_ASSEMBLING_BYTES);
    // h0 would hold more than any other: no room is made for it.
    expect(parts.offer('h0', part(1, 1, 3, []), 1, 1000)).toMatchObject({ kind: 'refused', why: expect.stringMatching(/assembly/) as unknown });
    expect(parts.bytes).toBe(MAX_ASSEMBLING_BYTES);
    expect(parts.offer('late', part(1, 0, 2, []), 1, ASSEMBLY_MS + 1).kind).toBe('waiting');
    expect(parts.bytes).toBe(1);
  });

  it('four colluding hosts that fill the room for all leave another host room: its table assembles whole, and what they hold is evicted largest first', () => {
    const parts = new TableParts();
    const MiB = 1024 * 1024;
    const colluding = [MAX_TABLE_BYTES, MAX_TABLE_BYTES, MAX_TABLE_BYTES - 2 * MiB];
    expect(parts.offer('a', part(1, 0, 3, containers(0, 1)), 2 * MiB, 0).kind).toBe('waiting');
    colluding.forEach((bytes, h) => expect(parts.offer(`evil${h}`, part(1, 0, 64, []), bytes, 0).kind).toBe('waiting'));
    expect(parts.offer('evil3', part(1, 0, 64, []), MAX_TABLE_BYTES, 0).kind).toBe('waiting');
    expect(parts.bytes).toBe(MAX_ASSEMBLING_BYTES);
    // A fifth host's part takes the room of the one holding the most, not a's, which holds less than any of them.
    expect(parts.offer('evil4', part(1, 0, 64, []), MiB, 10).kind).toBe('waiting');
    expect(parts.offer('evil4', part(1, 1, 64, []), MAX_TABLE_BYTES - MiB, 10).kind).toBe('waiting');
    expect(parts.bytes).toBe(MAX_ASSEMBLING_BYTES);
    // a's other parts: room is made for them from the colluding hosts' tables, each larger than a's.
    expect(parts.offer('a', part(1, 1, 3, containers(1, 1)), 2 * MiB, 20).kind).toBe('waiting');
    expect(parts.bytes).toBeLessThanOrEqual(MAX_ASSEMBLING_BYTES);
    expect(ids(parts.offer('a', part(1, 2, 3, containers(2, 1)), 2 * MiB, 30))).toEqual(['id0', 'id1', 'id2']);
    // The colluding hosts' own parts refill the room, never past it, and never take it from a smaller table.
    for (let i = 1; i < 40; i++) for (let h = 0; h < 5; h++) parts.offer(`evil${h}`, part(1, i % 64, 64, []), MiB, 40 + i);
    expect(parts.bytes).toBeLessThanOrEqual(MAX_ASSEMBLING_BYTES);
    expect(parts.offer('b', part(1, 0, 2, containers(7, 1)), MiB, 100).kind).toBe('waiting');
    expect(ids(parts.offer('b', part(1, 1, 2, containers(8, 1)), MiB, 110))).toEqual(['id7', 'id8']);
  });
});

describe('an agent\'s table: labels within bounds, parts under max_payload', () => {
  it('labels past a container\'s bound, or past the host\'s, are omitted and say so', () => {
    const big = { k: 'v'.repeat(MAX_LABEL_BYTES_PER_CONTAINER) };
    const [omitted, kept] = tableOf([{ Id: 'x', Names: ['/x'], Labels: big }, { Id: 'y', Names: ['/y'], Labels: { role: 'web' }, State: 'running' }]);
    expect(omitted).toEqual({ id: 'x', names: ['x'], labelsOmitted: true });
    expect(kept).toEqual({ id: 'y', names: ['y'], labels: { role: 'web' }, state: 'running' });
    const fill = { k: 'v'.repeat(MAX_LABEL_BYTES_PER_CONTAINER - 1) };
    const rows = Array.from({ length: MAX_LABEL_BYTES_PER_HOST / MAX_LABEL_BYTES_PER_CONTAINER + 1 }, (_, i) => ({ Id: `i${i}`, Labels: fill }));
    const table = tableOf(rows);
    expect(table.filter((c) => c.labelsOmitted).length).toBe(1);
    expect(table.at(-1)?.labelsOmitted).toBe(true);
    expect(beatSchema.safeParse({ startedAt: 1, version: 1, engine: 'up', containers: [{ id: 'x', names: [], labels: big }] }).success).toBe(false);
  });

  it('a table over max_payload goes in parts, each under it, that the gateway assembles into the same table', () => {
    const table = tableOf(Array.from({ length: 3000 }, (_, i) => ({ Id: `${i}`.padStart(64, 'f'), Names: [`/name-${i}`], Labels: { role: i % 2 ? 'web' : 'db' }, State: 'running' })));
    const messages = tableMessages({ startedAt: 1, version: 4, engine: 'up' }, table, 64 * 1024)!;
    expect(messages.length).toBeGreaterThan(3);
    for (const m of messages) expect(Buffer.byteLength(m)).toBeLessThanOrEqual(64 * 1024);
    const parts = new TableParts();
    const offered = messages.reverse().map((m) => parts.offer('a', beatSchema.parse(JSON.parse(m)), Buffer.byteLength(m)));
    expect(offered.at(-1)).toEqual({ kind: 'table', containers: table });
    expect(tableMessages({ startedAt: 1, version: 1, engine: 'up' }, table.slice(0, 2), 64 * 1024)).toHaveLength(1);
  });

  it('a table a gateway would drop (over its containers, parts or bytes) is not made into messages: the agent withholds it', () => {
    const row = (i: number): RoutedContainer => ({ id: `${i}`.padStart(64, 'f'), names: [`n-${i}`] });
    const beat = { startedAt: 1, version: 1, engine: 'up' as const };
    expect(tableMessages(beat, Array.from({ length: MAX_TABLE_ENTRIES }, (_, i) => row(i)), 1024 * 1024)).toBeDefined();
    expect(tableMessages(beat, Array.from({ length: MAX_TABLE_ENTRIES + 1 }, (_, i) => row(i)), 1024 * 1024)).toBeUndefined();
    // 64 parts of 4 KiB hold about 2,600 of these rows; and 64 parts of 1 MiB more than the 16 MiB a table may have.
    expect(tableMessages(beat, Array.from({ length: 2000 }, (_, i) => row(i)), 4096)).toBeDefined();
    expect(tableMessages(beat, Array.from({ length: 3000 }, (_, i) => row(i)), 4096)).toBeUndefined();
    const labelled = (i: number): RoutedContainer => ({ ...row(i), names: Array.from({ length: 16 }, (_, n) => `${n}-${i}`.padEnd(256, 'x')), image: 'i'.repeat(1024), status: 's'.repeat(256) });
    const heavy = Array.from({ length: 4000 }, (_, i) => labelled(i));
    expect(Buffer.byteLength(JSON.stringify(heavy))).toBeGreaterThan(MAX_TABLE_BYTES);
    expect(tableMessages(beat, heavy, 1024 * 1024)).toBeUndefined();
    expect(tableMessages(beat, heavy.slice(0, 2500), 1024 * 1024)).toBeDefined();
  });
});
