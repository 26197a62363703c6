/** bench/results/loss.json (`npm run bench:loss`) and its table, for bench/loss.ts and bench/RESULTS.md. */
import { fmt } from './measure.js';

export interface LossResult {
  loss: number;
  carrier: string;
  /** MB/s of the subscription, or undefined when it did not finish in time. */
  mbPerSec?: number;
  intact?: boolean;
  /** Unary calls per second, one after another. */
  callsPerSec?: number;
  p99Ms?: number;
  note?: string;
}

export interface LossResults {
  readonly date: string;
  readonly totalMiB: number;
  readonly calls: number;
  readonly results: readonly LossResult[];
}

export function lossTable({ totalMiB, calls, results }: Pick<LossResults, 'totalMiB' | 'calls' | 'results'>): string[] {
  const ws = (loss: number, key: 'mbPerSec' | 'callsPerSec'): number | undefined => results.find((r) => r.loss === loss && r.carrier === 'WebSocket')?.[key];
  const cell = (r: LossResult, key: 'mbPerSec' | 'callsPerSec'): string => {
    const v = r[key];
    if (v === undefined) return r.note ?? '-';
    const base = ws(r.loss, key);
    return `${fmt(v, key === 'mbPerSec' ? 1 : 0)}${base && r.carrier !== 'WebSocket' ? ` (${(v / base).toFixed(2)}×)` : ''}`;
  };
  return [
    `| loss | carrier | ${totalMiB} MiB subscription, MB/s (vs WebSocket) | every byte | ${calls} unary calls in a row, calls/s (vs WebSocket) | p99 ms |`,
    '|---:|---|---:|---|---:|---:|',
    ...results.map(
      (r) =>
        `| ${(r.loss * 100).toFixed(0)}% | ${r.carrier} | ${cell(r, 'mbPerSec')} | ${r.intact === undefined ? '-' : r.intact ? 'yes' : 'NO'} | ${cell(r, 'callsPerSec')} | ${r.p99Ms === undefined ? '-' : fmt(r.p99Ms, 1)} |`,
    ),
  ];
}
