/** The results as markdown tables, one per group: scenario (metric) × subject, median (min–max), ratios to peers. */
import { fmt } from '../measure.js';
import type { Comparison, Row } from '../rows.js';

const digits = (n: number): number => (Math.abs(n) < 10 ? 2 : 0);

/** `7,919 (7,634–8,117) calls/s`: the median and the runs' spread. */
export const valueText = (row: Row): string =>
  `${fmt(row.value, digits(row.value))}${row.min === undefined || row.max === undefined || row.min === row.max ? '' : ` (${fmt(row.min, digits(row.value))}–${fmt(row.max, digits(row.value))})`} ${row.unit}`.trim();

/** `3.17× (2.95–4.09)`: a ratio and the spread of its rounds (none when one round or one value). */
export const times = (c: Comparison): string =>
  `${c.ratio.toFixed(2)}×${c.ratioMin === undefined || c.ratioMax === undefined || c.ratioMin === c.ratioMax ? '' : ` (${c.ratioMin.toFixed(2)}–${c.ratioMax.toFixed(2)})`}`;

/** `3.17× (2.95–4.09) grpc-js`. */
export const ratioText = (c: Comparison): string => `${times(c)} ${c.peer}`;

/** One line for the console as a row comes in. */
export const rowLine = (row: Row): string =>
  `  ${row.group} · ${row.metric} · ${row.subject}: ${valueText(row)}${row.vs.length ? `  ${row.vs.map(ratioText).join('; ')}` : ''}`;

/** The groups of `rows`, in the order they first appear. */
export const groupsOf = (rows: readonly Row[]): string[] => [...new Set(rows.map((r) => r.group))];

export function groupTable(rows: readonly Row[], group: string): string[] {
  return [
    '| scenario | subject | median (min–max) | vs peers: median (min–max) of per-round ratios |',
    '|---|---|---:|---|',
    ...rows.filter((r) => r.group === group).map((r) => `| ${r.metric} | ${r.subject} | ${valueText(r)} | ${r.vs.map(ratioText).join('; ')} |`),
  ];
}

/** Every group's table under a heading of its name. */
export function resultsTables(rows: readonly Row[], heading = '###'): string[] {
  return groupsOf(rows).flatMap((group) => [`${heading} ${group}`, '', ...groupTable(rows, group), '']);
}
