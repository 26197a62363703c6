/**
 * Two full runs in a row of the same commit, compared: how far each median ratio (a row
 * against one of its peers) moved from the first run to the second. A ratio is what the
 * page claims, so it is what has to repeat.
 */
import type { Results } from '../results.js';
import type { Comparison, Row } from '../rows.js';
import { times } from './table.js';

/** How far a median ratio may move between two runs and still count as the same figure. */
export const REPEAT_LIMIT = 0.15;

export interface Moved {
  readonly row: Row;
  readonly first: Comparison;
  readonly second: Comparison;
  /** second / first − 1. */
  readonly change: number;
}

const keyOf = (r: Row): string => `${r.group}\u0000${r.metric}\u0000${r.subject}`;

/** Every ratio both runs measured, the largest move first. */
export function movedRatios(first: Results, second: Results): Moved[] {
  const seconds = new Map(second.rows.map((r) => [keyOf(r), r]));
  return first.rows
    .flatMap((row) => {
      const other = seconds.get(keyOf(row));
      if (!other) return [];
      return row.vs.flatMap((first) => {
        const second = other.vs.find((c) => c.peer === first.peer);
        return second && first.ratio > 0 ? [{ row, first, second, change: second.ratio / first.ratio - 1 }] : [];
      });
    })
    .sort((a, b) => Math.abs(b.change) - Math.abs(a.change));
}

/** Why two results cannot be compared as a repeat, or undefined when they can. */
export function notARepeat(first: Results, second: Results): string | undefined {
  if (first.commit !== second.commit) return `they measured different commits (${first.commit ?? 'unknown'}, ${second.commit ?? 'unknown'})`;
  if (second.date <= first.date) return 'the second run is not later than the first';
  return undefined;
}

const pct = (x: number): string => `${x >= 0 ? '+' : '−'}${Math.abs(x * 100).toFixed(1)}%`;

export function repeatTable(moved: readonly Moved[]): string[] {
  return [
    '| scenario | subject | vs | first run | second run | moved |',
    '|---|---|---|---:|---:|---:|',
    ...moved.map((m) => `| ${m.row.group} · ${m.row.metric} | ${m.row.subject} | ${m.first.peer} | ${times(m.first)} | ${times(m.second)} | ${pct(m.change)} |`),
  ];
}

/** The page's section: how many ratios repeated within the limit, and every one that did not. */
export function repeatSection(first: Results, second: Results | undefined): string[] {
  if (!second || notARepeat(first, second)) return [];
  const moved = movedRatios(first, second);
  const outside = moved.filter((m) => Math.abs(m.change) > REPEAT_LIMIT);
  const p99 = outside.filter((m) => m.row.metric.startsWith('p99'));
  return [
    '## Repeatability',
    '',
    `The same command ran again right after this run (\`--repeat\`, ${second.date.slice(11, 16)} UTC; the data: [\`results/repeat.json\`](results/repeat.json)). ` +
      `Of the ${moved.length} median ratios both runs measured, ${moved.length - outside.length} moved by ${REPEAT_LIMIT * 100}% or less from the first run to the second` +
      (outside.length ? `; these ${outside.length} moved more${p99.length ? ` (${p99.length} of them p99 latencies, the tail of a few hundred calls)` : ''}:` : '.'),
    '',
    ...(outside.length ? [...repeatTable(outside), ''] : []),
    ...(moved.length ? [`The largest move within the limit: ${pct(moved.find((m) => Math.abs(m.change) <= REPEAT_LIMIT)?.change ?? 0)}.`, ''] : []),
  ];
}
