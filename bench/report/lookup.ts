/** Finding a figure among the rows, for the sentences of bench/RESULTS.md. */
import { fmt } from '../measure.js';
import type { Comparison, Row } from '../rows.js';

export class Lookup {
  constructor(private readonly rows: readonly Row[]) {}

  row(group: string, metric: string, subject: string): Row | undefined {
    return this.rows.find((r) => r.group === group && r.metric === metric && r.subject === subject);
  }

  /** The rows of a group whose metric starts with `prefix`. */
  rowsOf(group: string, prefix = ''): Row[] {
    return this.rows.filter((r) => r.group === group && r.metric.startsWith(prefix));
  }

  vs(group: string, metric: string, subject: string, peer: string): Comparison | undefined {
    return this.row(group, metric, subject)?.vs.find((c) => c.peer === peer);
  }
}

/** A figure as the tables print it, without its range. */
export const figure = (value: number, unit = ''): string => `${fmt(value, Math.abs(value) < 10 ? 2 : 0)}${unit ? ` ${unit}` : ''}`;

/** `write(...)` when every figure it needs was measured; otherwise nothing (a quick or partial run). */
export function given<T extends unknown[]>(...values: { [K in keyof T]: T[K] | undefined }): (write: (...v: T) => string) => string | undefined {
  return (write) => (values.every((v) => v !== undefined) ? write(...(values as T)) : undefined);
}
