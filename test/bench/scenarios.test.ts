import { describe, expect, it } from 'vitest';
import { interleaved } from '../../bench/measure.js';
import { parseOptions } from '../../bench/options.js';
import { Recorder } from '../../bench/rows.js';
import { recordAll } from '../../bench/scenarios/compare.js';
import { selectScenarios } from '../../bench/scenarios.js';
import type { Subject } from '../../bench/subject.js';

describe('the bench\'s rows', () => {
  it('divide a subject by its peer round by round, and take the median of those ratios', () => {
    const record = new Recorder();
    // Per-round ratios 1, 2, 0.5: median 1. The ratio of the medians (20 / 10) would be 2.
    record.runs({ group: 'g', metric: 'm', subject: 'a', unit: 'calls/s' }, [10, 20, 30], { b: [10, 10, 60] });
    expect(record.rows).toEqual([
      { group: 'g', metric: 'm', subject: 'a', unit: 'calls/s', value: 20, min: 10, max: 30, vs: [{ peer: 'b', peerValue: 10, ratio: 1, ratioMin: 0.5, ratioMax: 2 }] },
    ]);
  });

  it('compare a subject only with the peers it names that ran in the same rounds', () => {
    const subject = (name: string, peers: string[]): Subject => ({ name, peers, close: async () => undefined });
    const subjects = [subject('ws', ['grpc-js', 'raw ws']), subject('grpc-js', [])];
    const record = new Recorder();
    recordAll(record, subjects, [
      { key: { group: 'g', metric: 'rate', unit: 'calls/s' }, values: { ws: [4, 4], 'grpc-js': [2, 1] } },
      { key: { group: 'g', metric: 'busy', unit: '%' }, values: { ws: [90, 90], 'grpc-js': [45, 45] }, compare: false },
    ]);
    expect(record.rows.map((r) => [r.subject, r.metric, r.vs.map((c) => `${c.ratio} ${c.peer}`)])).toEqual([
      ['ws', 'rate', ['3 grpc-js']],
      ['ws', 'busy', []],
      ['grpc-js', 'rate', []],
      ['grpc-js', 'busy', []],
    ]);
  });
});

describe('interleaved rounds', () => {
  it('run every subject once a round, every other round in reverse order, after a round that warms each up and is not kept', async () => {
    const order = async (warmUp: boolean): Promise<{ ran: string; kept: Record<string, number[]> }> => {
      const ran: string[] = [];
      const subject = (name: string) => async (): Promise<number> => ran.push(name);
      const kept = await interleaved(3, { a: subject('a'), b: subject('b'), c: subject('c') }, warmUp);
      return { ran: ran.join(''), kept };
    };
    expect(await order(false)).toEqual({ ran: 'abccbaabc', kept: { a: [1, 6, 7], b: [2, 5, 8], c: [3, 4, 9] } });
    expect(await order(true)).toEqual({ ran: 'abcabccbaabc', kept: { a: [4, 9, 10], b: [5, 8, 11], c: [6, 7, 12] } });
  });

  it('settles before every subject\'s turn, the warm-up\'s too', async () => {
    const ran: string[] = [];
    const subject = (name: string) => async (): Promise<number> => ran.push(name);
    await interleaved(2, { a: subject('a'), b: subject('b') }, true, async () => void ran.push('.'));
    expect(ran.join('')).toBe('.a.b.a.b.b.a');
  });
});

describe('choosing what runs', () => {
  it('--only names scenarios by id or by group, and --quick keeps the quick ones of a group, and runs one named by its id smaller', () => {
    const ids = (argv: string[]): string[] => selectScenarios(parseOptions(argv, {})).map((s) => s.id);
    expect(ids(['--only', 'unary'])).toEqual(['unary-1', 'unary-64']);
    expect(ids(['--only', 'unary,exec-true'])).toEqual(['unary-1', 'unary-64', 'exec-true']);
    expect(ids(['--quick', '--only', 'unary'])).toEqual(['unary-1']);
    expect(ids(['--quick', '--only', 'fleet-memory,unary'])).toEqual(['unary-1', 'fleet-memory']);
    expect(ids(['--quick'])).toEqual(['unary-1', 'stream-100B', 'exec-dd']);
  });

  it('refuses a name no scenario has, rather than running nothing', () => {
    expect(() => selectScenarios(parseOptions(['--only', 'unray'], {}))).toThrow(/no scenario or group unray/);
  });

  it('only a run of everything (with a baseline beside it or not) is the full run that makes RESULTS.md, and only a full run warms up and repeats', () => {
    expect(parseOptions([], {})).toMatchObject({ full: true, warmUp: true, runs: 5, command: 'npm run bench' });
    expect(parseOptions(['--quick'], {})).toMatchObject({ full: false, warmUp: false, runs: 3, command: 'npm run bench -- --quick' });
    expect(parseOptions(['--only', 'unary'], { BENCH_RUNS: '7' })).toMatchObject({ full: false, runs: 7, command: 'BENCH_RUNS=7 npm run bench -- --only unary' });
    expect(parseOptions(['--baseline', 'x/dist'], {}).full).toBe(true);
    expect(parseOptions(['--baseline', 'x/dist', '--repeat'], {}).repeat).toBe(true);
    expect(() => parseOptions(['--only', 'unary', '--repeat'], {})).toThrow(/--repeat repeats a full run/);
  });

  it('leaves the fleet\'s scenarios, a run of their own, out of a run that does not name them', () => {
    expect(selectScenarios(parseOptions([], {})).some((s) => s.group === 'fleet')).toBe(false);
    expect(selectScenarios(parseOptions(['--only', 'fleet'], {})).map((s) => s.group)).toContain('fleet');
  });
});
