import { execFile } from 'node:child_process';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { promisify } from 'node:util';
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';
import { calleeEvents, eventTypes, limits, SHARED_STREAM_TYPE } from '../../src/protocol/index.js';

const ROOT = resolve(import.meta.dirname, '../..');
const read = (path: string): string => readFileSync(join(ROOT, path), 'utf8');
const markdownIn = (dir: string): string[] => readdirSync(join(ROOT, dir)).filter((name) => name.endsWith('.md')).map((name) => `${dir}/${name}`);
/** The pages a reader takes as true of the code. */
const pages = (): string[] => ['README.md', 'spec/PROTOCOL.md', ...markdownIn('docs'), ...markdownIn('bench')];

/** The text from `start` up to the next line that starts `end` (or the end of the text). */
function between(text: string, start: string, end: RegExp): string {
  const from = text.indexOf(start);
  expect(from, `"${start}" is there`).toBeGreaterThanOrEqual(0);
  const rest = text.slice(from + start.length);
  const stop = rest.search(end);
  return stop === -1 ? rest : rest.slice(0, stop);
}

const counts = ['zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten', 'eleven', 'twelve', 'thirteen', 'fourteen', 'fifteen'];
/** The count a page writes in words ("eleven event types"). */
function countWord(text: string, noun: string): number | undefined {
  const m = new RegExp(`\\b(${counts.join('|')})\\s+${noun}`, 'i').exec(text);
  return m ? counts.indexOf(m[1]!.toLowerCase()) : undefined;
}

/**
 * Finding 10 of issue 32: the docs had drifted from the code (no Layout row for
 * src/fleet, "five types" of envelope where there were eleven, limit defaults written in
 * five places). Each drift is a test here, so the next one fails CI instead of misleading
 * a reader.
 */
describe('docs/development.md "Layout" is the code\'s layout', () => {
  const table = between(read('docs/development.md'), '| folder | what | may import |', /\n\s*\n/);
  const rows = [...table.matchAll(/^\| `src\/([\w-]+)` \| .* \| (.*) \|$/gm)].map((m) => ({
    folder: m[1]!,
    mayImport: new Set([...m[2]!.matchAll(/`([\w-]+)`/g)].map((name) => name[1]!)),
  }));

  it('has a row for every folder of src/, and none for a folder that is not there', () => {
    const folders = readdirSync(join(ROOT, 'src')).filter((name) => statSync(join(ROOT, 'src', name)).isDirectory());
    expect(rows.map((row) => row.folder).sort()).toEqual(folders.sort());
  });

  it('says what each folder may import as the lint rule (eslint-rules/layers.js) decides it', async () => {
    const eslint = new ESLint({ cwd: ROOT });
    const layers = rows.map((row) => row.folder);
    for (const row of rows) {
      // One import of each other layer's entry point, one per line: the rule reports the lines it forbids.
      const others = layers.filter((layer) => layer !== row.folder);
      const code = others.map((layer, i) => `export * as l${i} from '../${layer}/index.js';`).join('\n');
      const [result] = await eslint.lintText(`${code}\n`, { filePath: join(ROOT, 'src', row.folder, 'layout-check.ts') });
      const forbidden = new Set((result?.messages ?? []).filter((m) => m.ruleId === 'callwire/layers').map((m) => others[m.line - 1]!));
      const allowed = others.filter((layer) => !forbidden.has(layer)).sort();
      // Every layer may import flow; the table says so once, above the rows, not in each.
      const written = [...new Set([...row.mayImport, 'flow'])].filter((layer) => layer !== row.folder).sort();
      expect(written, `src/${row.folder}`).toEqual(allowed);
    }
  }, 60_000);
});

describe('the event types the docs list are the protocol\'s', () => {
  it('docs/protocol.md names every event type of src/protocol, their number, and stream.shared beside them', () => {
    const overview = between(read('docs/protocol.md'), 'Every message is an envelope', /^Queries and mutations/m);
    const named = new Set([...overview.matchAll(/`(call\.[a-z]+)`/g)].map((m) => m[1]!));
    expect([...named].sort()).toEqual([...eventTypes].sort());
    expect(countWord(overview, 'event types')).toBe(eventTypes.length);
    expect(overview).toContain(`\`${SHARED_STREAM_TYPE}\``);
  });

  it('spec §4 opens with a table of every event type, its number, and which peer sends it', () => {
    const section = between(read('spec/PROTOCOL.md'), '## 4. Event types', /^### /m);
    const rows = [...section.matchAll(/^\| `([\w.]+)` \| (caller|callee|either) \| (.*) \|$/gm)].map((m) => ({ type: m[1]!, sentBy: m[2]! }));
    expect(rows.map((row) => row.type).sort()).toEqual([...eventTypes].sort());
    expect(rows.filter((row) => row.sentBy === 'callee').map((row) => row.type).sort()).toEqual([...calleeEvents].sort());
    expect(countWord(section, 'event types')).toBe(eventTypes.length);
    expect(section).toContain(`\`${SHARED_STREAM_TYPE}\``);
  });
});

describe('every limit default the docs state is the one in src/protocol/limits.ts', () => {
  const units: Record<string, number> = { B: 1, KiB: 1024, MiB: 1024 ** 2, GiB: 1024 ** 3, ms: 1, s: 1000, min: 60_000, h: 3_600_000 };
  /** "16 MiB", "4,096", "30 s", "24 h" at the start of `text`, in the limit's own unit (bytes, milliseconds, a count). */
  const valueAt = (text: string): number | undefined => {
    const m = /^([\d,]+(?:\.\d+)?)(?:\s*(KiB|MiB|GiB|B|ms|s|min|h)\b)?/.exec(text.trim());
    return m ? Number(m[1]!.replaceAll(',', '')) * (m[2] ? units[m[2]]! : 1) : undefined;
  };
  type LimitName = keyof typeof limits;
  const isLimit = (name: string): name is LimitName => Object.hasOwn(limits, name);
  /** Not a limit but the framing's own constant (spec §5.1): no option sets it, so §9 has no row for it. */
  const notOptions: readonly LimitName[] = ['framePrefixBytes'];

  it('spec §9\'s table has a row for every limit, with the code\'s default in figures and in words', () => {
    const table = between(read('spec/PROTOCOL.md'), '## 9. Limits', /^All limits are server options/m);
    const rows = [...table.matchAll(/^\| `(\w+)` \| ([\d,]+)(?: \(([^)]+)\))? \|/gm)];
    expect(rows.map((row) => row[1]!).sort()).toEqual(Object.keys(limits).filter((name) => !notOptions.includes(name as LimitName)).sort());
    for (const [, name, figures, words] of rows) {
      expect(isLimit(name!), name).toBe(true);
      expect(valueAt(figures!), name).toBe(limits[name as LimitName]);
      if (words !== undefined) expect(valueAt(words), `${name}: ${words}`).toBe(limits[name as LimitName]);
    }
  });

  it('a default written beside a limit\'s name (`maxResumeMs` (60 s), `maxBufferedBytesPerCall`, 1 MiB) anywhere in the docs is the code\'s', () => {
    const stated: string[] = [];
    const wrong: string[] = [];
    for (const page of pages()) {
      const text = read(page);
      const at = (index: number): string => `${page}:${text.slice(0, index).split('\n').length}`;
      // Over line breaks too: a sentence may wrap between a name and its value.
      for (const m of text.matchAll(/(?<!× )`(\w+)`(?=(?:\s+\(|,\s+)([^)]*))/g)) {
        const name = m[1]!;
        const value = valueAt(m[2]!);
        if (!isLimit(name) || value === undefined) continue;
        stated.push(`${at(m.index)}: ${name}`);
        if (value !== limits[name]) wrong.push(`${at(m.index)}: ${name} ${m[2]!.split('\n')[0]} (the code's default: ${limits[name]})`);
      }
      for (const m of text.matchAll(/`(\w+)` × `(\w+)`, ([\d,.]+\s+\w+)\s+with\s+the\s+defaults/g)) {
        const [a, b] = [m[1]!, m[2]!];
        if (!isLimit(a) || !isLimit(b)) continue;
        stated.push(`${at(m.index)}: ${a} × ${b}`);
        if (valueAt(m[3]!) !== limits[a] * limits[b]) wrong.push(`${at(m.index)}: ${m[0]} (the code's: ${limits[a] * limits[b]})`);
      }
    }
    // The docs do state defaults this way (the check is not vacuous): spec, security, transports, fleet, faq.
    expect(new Set(stated.map((s) => s.split(':')[0])).size).toBeGreaterThanOrEqual(5);
    expect(stated.some((s) => s.includes(' × '))).toBe(true);
    expect(wrong).toEqual([]);
  });

  it('`callwire serve --help` gives each limit option the code\'s default', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'serve', '--help'], { cwd: ROOT });
    // Commander wraps a description over several lines; an option starts at two spaces and a dash.
    const options = stdout
      .slice(stdout.indexOf('Options:'))
      .split(/\n(?= {2}-)/)
      .map((entry) => entry.replace(/\s+/g, ' ').trim());
    const checked: string[] = [];
    for (const option of options) {
      const m = /^--([\w-]+)(?: <(\w+)>)? (.*)$/.exec(option);
      if (!m) continue;
      const [, flag, argument, description] = m as unknown as [string, string, string | undefined, string];
      const camel = flag.replace(/-(\w)/g, (_, c: string) => c.toUpperCase());
      const seconds = argument === 'seconds';
      const name = seconds ? `${camel}Ms` : camel;
      if (!isLimit(name)) continue;
      const said = /\(default: "([^"]+)"\)/.exec(description)?.[1] ?? /\bdefault ([\d,.]+(?: \w+)?)\)/.exec(description)?.[1];
      expect(said, `--${flag} says its default`).toBeDefined();
      expect(valueAt(said!)! * (seconds ? 1000 : 1), `--${flag}: ${description}`).toBe(limits[name]);
      checked.push(name);
    }
    expect(checked.sort()).toEqual(['handshakeTimeoutMs', 'keepaliveMs', 'maxCallsInFlight', 'maxCallsPerIdentity', 'maxConnections', 'maxExecSessionsPerIdentity', 'maxInputBytes', 'maxOutboundBytesPerIdentity', 'maxResumeMs']);
  }, 60_000);
});

describe('the bench\'s pages name no machine', () => {
  it('bench/*.md and bench/results/*.json carry no local path (a home or work directory)', () => {
    const files = [...markdownIn('bench'), ...readdirSync(join(ROOT, 'bench/results')).map((name) => `bench/results/${name}`)];
    const local = files.flatMap((file) =>
      read(file)
        .split('\n')
        .flatMap((line, index) => (/(^|[\s`"'(=])\/(work|home|Users|root)\//.test(line) ? [`${relative(ROOT, join(ROOT, file))}:${index + 1}`] : [])),
    );
    expect(local).toEqual([]);
  });
});
