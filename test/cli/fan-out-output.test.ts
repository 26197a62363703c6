import { describe, expect, it } from 'vitest';
import { captureLimitBytes, formatGroups, groupOutputs, TargetLines } from '../../src/cli/fan-out-output.js';
import { selectionOf } from '../../src/cli/commands/exec-fan-out.js';
import { fanOutSummaryRecord } from '../../src/outcome/index.js';

const b = (text: string): Buffer => Buffer.from(text);

describe('TargetLines', () => {
  it('writes only whole lines, each prefixed with its target, keeping each target and stream apart', () => {
    const lines = new TargetLines();
    expect(lines.push('a/w1', 'stdout', b('hel')).toString()).toBe('');
    expect(lines.push('b/w1', 'stdout', b('other\nhalf')).toString()).toBe('b/w1: other\n');
    expect(lines.push('a/w1', 'stderr', b('err\n')).toString()).toBe('a/w1: err\n');
    expect(lines.push('a/w1', 'stdout', b('lo\nworld\nmore')).toString()).toBe('a/w1: hello\na/w1: world\n');
    expect(lines.flush('a/w1', 'stdout').toString()).toBe('a/w1: more\n');
    expect(lines.flush('a/w1', 'stdout').toString()).toBe('');
    expect(lines.flush('b/w1', 'stdout').toString()).toBe('b/w1: half\n');
  });

  it('a line longer than the bound is written in pieces, each prefixed, no byte lost', () => {
    const lines = new TargetLines(4);
    const out = lines.push('t', 'stdout', b('abcdefghij')).toString() + lines.flush('t', 'stdout').toString();
    expect(out).toBe('t: abcd\nt: efgh\nt: ij\n');
    expect(lines.push('t', 'stdout', b('abc\n')).toString()).toBe('t: abc\n');
    expect(lines.push('t', 'stdout', b('abcd\n')).toString()).toBe('t: abcd\n');
  });

  it('by default the bound is 64 KiB (docs/cli.md): 64 KiB less a byte is kept whole, a longer line leaves in 64 KiB pieces', () => {
    const lines = new TargetLines();
    expect(lines.push('t', 'stdout', Buffer.alloc(64 * 1024 - 1, 'x')).toString()).toBe('');
    expect(lines.push('t', 'stdout', b('x')).toString()).toBe(`t: ${'x'.repeat(64 * 1024)}\n`);
    const out = lines.push('t', 'stdout', Buffer.alloc(3 * 64 * 1024 + 10, 'y')).toString();
    expect(out).toBe(`t: ${'y'.repeat(64 * 1024)}\n`.repeat(3));
    expect(lines.flush('t', 'stdout').toString()).toBe(`t: ${'y'.repeat(10)}\n`);
  });

  it('keeps bytes that are not UTF-8 as they are', () => {
    const lines = new TargetLines();
    const out = lines.push('t', 'stdout', Uint8Array.from([0xff, 0xfe, 0x0a]));
    expect([...out]).toEqual([...b('t: '), 0xff, 0xfe, 0x0a]);
  });
});

describe('grouping (dshbak -c)', () => {
  it('groups byte-identical outputs, targets sorted, groups in order of their first target', () => {
    const groups = groupOutputs([
      { target: 'b/w2', output: b('same\n'), truncated: false },
      { target: 'a/w1', output: b('same\n'), truncated: false },
      { target: 'a/w0', output: b('other\n'), truncated: false },
      { target: 'c/w9', output: b('same\n'), truncated: true },
    ]);
    expect(groups.map((g) => g.targets)).toEqual([['a/w0'], ['a/w1', 'b/w2'], ['c/w9']]);
    expect(formatGroups(groups).toString()).toBe(
      [
        '----------------',
        'a/w0',
        '----------------',
        'other',
        '----------------',
        'a/w1,b/w2',
        '----------------',
        'same',
        '----------------',
        'c/w9',
        '----------------',
        'same',
        '[callwire: output truncated; only its beginning is grouped]',
        '',
      ].join('\n'),
    );
  });

  it('ends an output without a final newline with one', () => {
    expect(formatGroups(groupOutputs([{ target: 't', output: b('x'), truncated: false }])).toString()).toBe('----------------\nt\n----------------\nx\n');
  });

  it('keeps 1 MiB per target, and 256 MiB over all', () => {
    expect(captureLimitBytes(6)).toBe(1024 * 1024);
    expect(captureLimitBytes(1024)).toBe(256 * 1024);
  });
});

describe('selection flags', () => {
  it('-l and --targets make a selection, --targets split on commas; neither is a single exec', () => {
    expect(selectionOf({ label: [] })).toBeUndefined();
    expect(selectionOf({ label: ['role=web'] })).toEqual({ labels: ['role=web'], patterns: [] });
    expect(selectionOf({ label: [], targets: 'a/*, web-1,' })).toEqual({ labels: [], patterns: ['a/*', 'web-1'] });
  });
});

describe('the fan-out summary record', () => {
  it('counts exit codes, names every target that did not exit 0, and carries the exit code', () => {
    const record = fanOutSummaryRecord([
      { target: 'a/w1', exitCode: 0, stdoutBytes: 1, stderrBytes: 0 },
      { target: 'a/w2', exitCode: 3, stdoutBytes: 1, stderrBytes: 0 },
      { target: 'b/w1', error: { code: 'UNAVAILABLE', message: 'host b is down' }, stdoutBytes: 0, stderrBytes: 0 },
    ]);
    expect(record).toEqual({
      kind: 'callwire.fan-out',
      schema_version: '1.0',
      targets: 3,
      exit_code: 123,
      exit_codes: { '0': 1, '3': 1 },
      not_run: 1,
      failed: [
        { target: 'a/w2', exit_code: 3 },
        { target: 'b/w1', error: { code: 'UNAVAILABLE', message: 'host b is down' } },
      ],
      summary: '3 targets: 1 exit 0, 1 exit 3 (a/w2), 1 not run (b/w1: host b is down)',
    });
  });
});
