import { nestedArrays } from '../protocol/index.js';
import type { Features } from './scenario.js';
import { ScenarioFailure } from './verdict.js';

/** What a run knows that a step's `$` placeholders stand for. */
export interface Substitutions {
  readonly scenarioId: string;
  /** Unique to the run, so two runs' call ids never meet on one server. */
  readonly nonce: string;
  readonly url: string;
  readonly limits: Features['limits'];
  readonly container: string | undefined;
  /** Values `expect` steps captured by name (a resume token), for `$captured:name`. */
  readonly captured: ReadonlyMap<string, unknown>;
  /** What `http` steps with `saveAs` remembered of their answers (§5.6's resume). */
  readonly resumes: ReadonlyMap<string, { token: string; values: number; lastEventId: string }>;
}

/** Keys whose values are matchers: there `$base64` and `$zeros` stay as written, for the matcher to read. */
const MATCHER_KEYS = new Set(['expect', 'expectUnordered', 'expectOutput', 'output', 'terminal']);

/**
 * `$id:name` → a unique call id; `$captured:name` → a value an `expect` captured; `$container`; `$origin`; `$limit:name` (or `$limit:name*factor`); `$i` in repeats;
 * `{"$base64"}` → bytes; `{"$text": {"length": n}}`; `{"$zeros": {"length": n}}` → n zero bytes;
 * `{"$nested": {"levels": n}}` → n arrays, each the only element of the one around it.
 */
export function substitute(value: unknown, index: number | undefined, run: Substitutions, inMatcher = false): unknown {
  if (typeof value === 'string') {
    let s = index === undefined ? value : value.replaceAll('$i', String(index));
    if (s.startsWith('$limit:')) {
      const [name, factor] = s.slice('$limit:'.length).split('*') as [keyof Features['limits'], string | undefined];
      return run.limits[name] * (factor === undefined ? 1 : Number(factor));
    }
    if (s === '$container') return run.container ?? s;
    if (s.startsWith('$captured:')) return run.captured.get(s.slice('$captured:'.length)) ?? s;
    if (s === '$origin') return pageOrigin(run.url);
    s = s.replace(/\$id:([\w-]+)/g, (_m, name: string) => `${run.scenarioId}-${name}-${run.nonce}`);
    s = s.replace(/\$resume:([\w-]+)(?:\.(values|lastEventId))?/g, (_m, name: string, field?: 'values' | 'lastEventId') => {
      const saved = run.resumes.get(name);
      if (!saved) throw new ScenarioFailure(`$resume:${name}: no earlier http step saved it`);
      return field === undefined ? saved.token : String(saved[field]);
    });
    return s;
  }
  if (Array.isArray(value)) return value.map((v) => substitute(v, index, run, inMatcher));
  if (value !== null && typeof value === 'object') {
    const obj = value as Record<string, unknown>;
    const keys = Object.keys(obj);
    if (keys.length === 1 && typeof obj['$base64'] === 'string' && !inMatcher) return new Uint8Array(Buffer.from(obj['$base64'], 'base64'));
    if (keys.length === 1 && obj['$zeros'] !== undefined && !inMatcher) {
      const spec = substitute(obj['$zeros'], index, run, inMatcher) as { length: number };
      return new Uint8Array(spec.length);
    }
    if (keys.length === 1 && obj['$text'] !== undefined) {
      const spec = substitute(obj['$text'], index, run, inMatcher) as { length: number; plus?: number };
      return 'x'.repeat(spec.length + (spec.plus ?? 0));
    }
    if (keys.length === 1 && obj['$nested'] !== undefined) {
      const spec = substitute(obj['$nested'], index, run, inMatcher) as { levels: number; plus?: number };
      return nestedArrays(spec.levels + (spec.plus ?? 0));
    }
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(obj)) out[k] = substitute(v, index, run, inMatcher || MATCHER_KEYS.has(k));
    return out;
  }
  return value;
}

/** The origin of a page the server under test serves where the run reaches it (§10.1's same origin). */
function pageOrigin(url: string): string {
  const page = new URL(url);
  page.protocol = page.protocol === 'ws:' ? 'http:' : 'https:';
  return page.origin;
}
