/** Small statistics and timing helpers for the benchmark. */
import { readFileSync } from 'node:fs';

export const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

export const percentile = (sorted: number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

export interface UnaryResult {
  callsPerSec: number;
  p50Ms: number;
  p99Ms: number;
}

/** `concurrency` callers loop on `call` for `durationMs`; calls/s and latency percentiles. */
export async function unaryLoad(call: () => Promise<unknown>, concurrency: number, durationMs: number): Promise<UnaryResult> {
  const latencies: number[] = [];
  const end = performance.now() + durationMs;
  const worker = async (): Promise<void> => {
    while (performance.now() < end) {
      const t = performance.now();
      await call();
      latencies.push(performance.now() - t);
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: concurrency }, worker));
  const elapsed = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  return { callsPerSec: latencies.length / elapsed, p50Ms: percentile(latencies, 50), p99Ms: percentile(latencies, 99) };
}

/** Runs `fn` `runs` times and keeps the run whose `key` is the median. */
export async function medianOf<T>(runs: number, fn: () => Promise<T>, key: (t: T) => number): Promise<T> {
  const results: T[] = [];
  for (let i = 0; i < runs; i++) results.push(await fn());
  const m = median(results.map(key));
  return results.reduce((best, r) => (Math.abs(key(r) - m) < Math.abs(key(best) - m) ? r : best));
}

export const fmt = (n: number, digits = 0): string => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

export interface Spread {
  readonly min: number;
  readonly median: number;
  readonly max: number;
}

export const spread = (values: number[]): Spread => ({ min: Math.min(...values), median: median(values), max: Math.max(...values) });

/**
 * Runs every subject once per round, in turn, for `rounds` rounds: a noisy minute on a
 * shared machine hits all of them, so ratios taken round by round are fair. Every other
 * round runs them in reverse order, so that no subject always runs right after the same
 * one (and inherits its garbage and its cold caches). A first round that is not kept
 * warms every subject up: without it, the first kept round ran each subject's code cold
 * (the JIT, connection pools), the spread of a row came mostly from that round, and two
 * runs' medians differed by whichever subject it hurt most. `settle` runs before each
 * subject's turn (a collection of the processes the subjects share), so that no subject
 * pays for the garbage of the one before it.
 */
export async function interleaved<T>(
  rounds: number,
  subjects: Readonly<Record<string, () => Promise<T>>>,
  warmUp = true,
  settle: () => Promise<void> = async () => undefined,
): Promise<Record<string, T[]>> {
  const out: Record<string, T[]> = {};
  for (const name of Object.keys(subjects)) out[name] = [];
  const inOrder = Object.entries(subjects);
  const reversed = [...inOrder].reverse();
  if (warmUp) for (const [, run] of inOrder) await settle().then(run);
  for (let round = 0; round < rounds; round++) {
    for (const [name, run] of round % 2 ? reversed : inOrder) out[name]!.push(await settle().then(run));
  }
  return out;
}

/** The ratio subject/peer per round (same index), as a spread. */
export const ratios = (subject: number[], peer: number[]): Spread => spread(subject.map((v, i) => v / peer[i]!));

/** The whole machine's busy and total CPU time so far, all cores summed, in seconds (Linux /proc/stat; zeros elsewhere). */
export function machineCpu(): { busy: number; total: number } {
  let fields: number[];
  try {
    fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  } catch {
    return { busy: 0, total: 0 };
  }
  const ticksPerSecond = 100; // USER_HZ, 100 on every Linux this runs on
  const total = fields.reduce((a, b) => a + b, 0) / ticksPerSecond;
  const idle = (fields[3]! + fields[4]!) / ticksPerSecond; // idle and iowait
  return { busy: total - idle, total };
}

/** CPU-seconds a process has used so far, user and kernel (Linux /proc; 0 elsewhere or once it is gone). */
export function processCpu(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in USER_HZ
  } catch {
    return 0;
  }
}

export interface Costed {
  /** What the run measured (MB/s, ms, …). */
  readonly value: number;
  /** Busy CPU-seconds of the whole machine during the run: every process of the path, kernel included. */
  readonly machineCpuSeconds: number;
  /** The machine's busy share during the run, 0–1 of all its cores. */
  readonly busyShare: number;
  /** CPU-seconds of each named process during the run. */
  readonly processes: Readonly<Record<string, number>>;
}

/**
 * Runs `fn` and counts the whole machine's CPU during it. On a machine with nothing
 * else running, that is the cost of the path measured, every process included (the
 * engine, its shim, our server and client, the docker CLI), which a throughput
 * figure alone hides: a path that saturates the machine is bounded by its CPU per byte.
 */
export async function costed(fn: () => Promise<number>, pids: Readonly<Record<string, number>> = {}): Promise<Costed> {
  const before = machineCpu();
  const processesBefore = Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, processCpu(pid)]));
  const value = await fn();
  const after = machineCpu();
  const processes = Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, processCpu(pid) - processesBefore[name]!]));
  const elapsed = after.total - before.total;
  return { value, machineCpuSeconds: after.busy - before.busy, busyShare: elapsed > 0 ? (after.busy - before.busy) / elapsed : 0, processes };
}
