import { describe, expect, it } from 'vitest';
import { captureLimitBytes, escapeTerminalControls, formatGroups, groupOutputs, TargetLines } from '../../src/cli/fan-out-output.js';
import { HELD_BYTES_PER_TARGET, slicesOf, TURN_BYTES, TurnWriter } from '../../src/cli/fan-out-turns.js';
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

  it('keeps bytes that are not UTF-8 as they are, but for the C1 range', () => {
    const lines = new TargetLines();
    const out = lines.push('t', 'stdout', Uint8Array.from([0xff, 0xfe, 0x0a]));
    expect([...out]).toEqual([...b('t: '), 0xff, 0xfe, 0x0a]);
  });

  it('escapes what would move the cursor over its prefix: a forged line stays on its own target', () => {
    const lines = new TargetLines();
    // CR and an erase (CSI 2K), then the line of another target, as a hostile target prints it.
    const forged = lines.push('web-1', 'stdout', b('\r\u001b[2Kdb-1: migrated\n')).toString();
    expect(forged).toBe('web-1: \\r\\x1b[2Kdb-1: migrated\n');
    // An OSC title, a C1 CSI (U+009B) as UTF-8, a backspace, a bell: each escaped; tab and backslash kept.
    expect(lines.push('t', 'stderr', b('\u001b]0;owned\u0007 \u009b2J \b\tpath\\x\n')).toString()).toBe('t: \\x1b]0;owned\\x07 \\x9b2J \\x08\tpath\\x\n');
    // The last line, flushed at the target's end, too.
    lines.push('t', 'stdout', b('\rtail'));
    expect(lines.flush('t', 'stdout').toString()).toBe('t: \\rtail\n');
  });

  it('escapes a lone byte 0x80 to 0x9F (CSI to an 8-bit terminal) but keeps UTF-8 whose continuation bytes fall there', () => {
    expect([...escapeTerminalControls(Uint8Array.from([0x41, 0x9b, 0x32, 0x4a]))]).toEqual([...b('A\\x9b2J')]);
    const text = b('héllo € 𝄞 Ā ꀀ');
    expect(escapeTerminalControls(text).equals(text)).toBe(true);
    // An overlong or truncated sequence is not UTF-8: its bytes are judged one by one.
    expect(escapeTerminalControls(Uint8Array.from([0xc0, 0x9b, 0xe2, 0x82])).toString('latin1')).toBe('\u00c0\\x9b\u00e2\\x82');
  });

  it('a long line cut in pieces is cut between characters, so no piece shows half of one', () => {
    const lines = new TargetLines(5);
    // 'aaaa' and a 3-byte character: the cut at 5 would split it; the piece ends before it.
    const out = lines.push('t', 'stdout', b('aaaa€bbbbb\n')).toString();
    expect(out).toBe('t: aaaa\nt: €bb\nt: bbb\n');
  });
});

describe('TurnWriter: targets take turns on one stream', () => {
  /** A stream whose reader takes one write when told: what it was given, in order. */
  const slowStream = () => {
    const written: Buffer[] = [];
    const pending: (() => void)[] = [];
    const write = (bytes: Buffer): Promise<void> =>
      new Promise((resolve) => {
        written.push(bytes);
        pending.push(resolve);
      });
    // A slow reader: each write waits a little before it is taken.
    const readOne = async (): Promise<void> => {
      await new Promise((resolve) => setTimeout(resolve, 3));
      pending.shift()?.();
      await new Promise((resolve) => setImmediate(resolve));
    };
    return { written, write, readOne };
  };

  it('cuts output into turns whose prefixed lines come to at most TURN_BYTES, a longer line cut', () => {
    const output = b('y\n'.repeat(10_000));
    const slices = slicesOf(output, 'flood: '.length);
    expect(Buffer.concat(slices).equals(output)).toBe(true);
    for (const [i, slice] of slices.entries()) {
      const lines = new TargetLines().push('flood', 'stdout', slice);
      expect(lines.byteLength).toBeLessThanOrEqual(TURN_BYTES);
      if (i < slices.length - 1) expect(lines.byteLength).toBeGreaterThan(TURN_BYTES - 'flood: y\n'.length);
    }
    expect(slicesOf(b(`${'x'.repeat(TURN_BYTES * 2)}\nshort\n`), 3).map((s) => s.byteLength)).toEqual([TURN_BYTES, TURN_BYTES, 7]);
  });

  it('a reader that takes each write at once gets turns after turns in one write, up to 64 KiB', async () => {
    const written: Buffer[] = [];
    const writer = new TurnWriter('stdout', new TargetLines(), async (bytes) => void written.push(bytes));
    writer.add('flood', b('y\n'.repeat(HELD_BYTES_PER_TARGET)));
    await writer.close();
    expect(Math.max(...written.map((w) => w.byteLength))).toBeGreaterThan(8 * TURN_BYTES);
    expect(Math.max(...written.map((w) => w.byteLength))).toBeLessThanOrEqual(64 * 1024 + TURN_BYTES);
  });

  it("a target that floods gets one turn before another's line; over its share its room comes with its own turns, not all of them", async () => {
    const stream = slowStream();
    const writer = new TurnWriter('stdout', new TargetLines(), stream.write);
    // Twice its share in one piece, made into lines only at their turns (a prefix grows "y" sixfold).
    writer.add('flood', b('y\n'.repeat(HELD_BYTES_PER_TARGET)));
    let flooderHeld = true;
    const room = writer.room('flood');
    expect(room).toBeDefined();
    void room!.then(() => (flooderHeld = false));
    // Another target, under its share, may go on at once; its line is written after the turn being written now.
    writer.add('quiet', b('done\n'));
    expect(writer.room('quiet')).toBeUndefined();
    writer.end('quiet', b('callwire: quiet: exit 3\n'));
    for (let i = 0; i < 5; i++) await stream.readOne();
    // One write is made while the stream writes the one before: behind two of the flooder's at most.
    // Each write waited for its reader: none grew past a turn and the one it started under it.
    expect(stream.written.every((w) => w.byteLength <= 2 * TURN_BYTES)).toBe(true);
    const quietAt = stream.written.findIndex((w) => w.toString().includes('quiet: done'));
    expect(quietAt).toBeGreaterThanOrEqual(0);
    expect(quietAt).toBeLessThanOrEqual(2);
    // Its end is a turn of its own: after its output, and the flooder's next at most.
    const endAt = stream.written.findIndex((w) => w.toString().includes('callwire: quiet: exit 3'));
    expect(endAt - quietAt).toBeLessThanOrEqual(2);
    expect(endAt).toBeGreaterThanOrEqual(quietAt);
    // The flooder's room comes once its own bytes waiting are under its share: after its turns for half of them.
    let turns = 0;
    while (flooderHeld) {
      await stream.readOne();
      turns++;
    }
    const linesPerTurn = Math.floor(TURN_BYTES / 'flood: y\n'.length);
    expect(turns).toBeLessThanOrEqual(HELD_BYTES_PER_TARGET / 2 / linesPerTurn + 2);
    const closing = writer.close();
    let done = false;
    void closing.then(() => (done = true));
    while (!done) await stream.readOne();
    expect(Buffer.concat(stream.written).toString().split('\n').filter((l) => l === 'flood: y')).toHaveLength(HELD_BYTES_PER_TARGET);
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
