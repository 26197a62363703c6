/** One server stream of many items, every subject that streams: items/s for small items, MB/s for large. */
import type { Bench } from '../scenario.js';
import { recordAll, roundsOf } from './compare.js';

const MB = 1e6;

export interface StreamSize {
  readonly label: string;
  readonly items: number;
  readonly quickItems?: number;
  readonly itemBytes: number;
}

/**
 * Each turn about a second long or more. The full collection before a turn (compare.ts)
 * discards most optimized code, and a function called once per item reaches TurboFan again
 * after about 3,000 calls: a shorter turn measures the JIT's lower tiers, not the stream
 * (bench/PROFILE.md, "Against the code before issue 32's rework").
 */
export const SMALL_ITEMS: StreamSize = { label: '100 B items', items: 200_000, quickItems: 100_000, itemBytes: 100 };
export const LARGE_ITEMS: StreamSize = { label: '64 KiB items', items: 10_000, quickItems: 2_000, itemBytes: 64 * 1024 };

export async function streaming(bench: Bench, size: StreamSize): Promise<void> {
  const items = bench.options.quick ? (size.quickItems ?? size.items) : size.items;
  const small = size.itemBytes <= 100;
  const subjects = bench.lineup.subjects.filter((s) => s.stream);
  const values = await roundsOf(bench, subjects, bench.options.runs, async (s) => {
    const t = performance.now();
    const bytes = await s.stream!(items, size.itemBytes);
    const seconds = (performance.now() - t) / 1000;
    return small ? items / seconds : bytes / MB / seconds;
  });
  recordAll(bench.record, subjects, [{ key: { group: 'streaming', metric: size.label, unit: small ? 'items/s' : 'MB/s' }, values }]);
}
