/**
 * `--baseline`: each row of this build against the same row of the baseline build,
 * measured in the same rounds, worst first, so "no row more than 10% worse" reads off
 * the top of the table.
 */
import { BASELINE } from '../names.js';
import type { Row } from '../rows.js';
import { times } from './table.js';

/** Units where less is better (time, CPU, memory); every other compared unit is a rate. */
const LESS_IS_BETTER = new Set(['ms', 's/GiB', 'KiB', 'B']);

/** How much worse this build is than the baseline on `row`, as a share (negative: better). */
export const worseBy = (row: Row, ratio: number): number => (LESS_IS_BETTER.has(row.unit) ? ratio - 1 : 1 - ratio);

export function baselineTable(rows: readonly Row[]): string[] {
  const compared = rows.flatMap((row) => {
    const c = row.vs.find((v) => v.peer === `${row.subject}${BASELINE}`);
    return c ? [{ row, c, worse: worseBy(row, c.ratio) }] : [];
  });
  if (!compared.length) return [];
  return [
    '',
    '### against the baseline, worst first',
    '',
    '| scenario | subject | this build / baseline: median (min–max) of per-round ratios | change |',
    '|---|---|---:|---|',
    ...compared
      .sort((a, b) => b.worse - a.worse)
      .map(({ row, c, worse }) => `| ${row.group} · ${row.metric} | ${row.subject} | ${times(c)} | ${Math.abs(worse * 100).toFixed(1)}% ${worse > 0 ? 'worse' : 'better'} |`),
    '',
  ];
}
