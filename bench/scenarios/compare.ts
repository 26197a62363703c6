/** Runs subjects interleaved and records each one's rows beside its peers'. */
import { interleaved } from '../measure.js';
import type { Recorder, RowKey } from '../rows.js';
import type { Bench } from '../scenario.js';
import type { Subject } from '../subject.js';

/**
 * Every subject once per round, for `rounds` rounds, after a round that warms them up;
 * each subject's results by its name.
 */
export const roundsOf = <T>(bench: Bench, subjects: readonly Subject[], rounds: number, run: (subject: Subject) => Promise<T>): Promise<Record<string, T[]>> =>
  interleaved(rounds, Object.fromEntries(subjects.map((s) => [s.name, () => run(s)])), bench.options.warmUp, () => collectGarbage(bench));

/**
 * A full collection in the bench's own process (every subject's client lives in it) and in
 * each server process (the peers' servers share the first), before a subject's turn.
 */
export async function collectGarbage(bench: Bench): Promise<void> {
  (globalThis as { gc?: () => void }).gc?.();
  await Promise.all(bench.lineup.servers.map((s) => s.ws.call('bench/memory')));
}

/** One metric's values for every subject, by name. */
export interface Measured {
  readonly key: Omit<RowKey, 'subject'>;
  readonly values: Readonly<Record<string, readonly number[]>>;
  /** False for a figure that is no better or worse for being above a peer's (how busy the machine was). */
  readonly compare?: boolean;
}

/** Records, subject by subject, each metric with its ratios to the subject's peers that ran in the same rounds. */
export function recordAll(record: Recorder, subjects: readonly Subject[], metrics: readonly Measured[]): void {
  for (const subject of subjects) {
    for (const { key, values, compare = true } of metrics) {
      const own = values[subject.name];
      if (!own) continue;
      const peers = compare ? Object.fromEntries(subject.peers.filter((p) => values[p]).map((p) => [p, values[p]!])) : {};
      record.runs({ ...key, subject: subject.name }, own, peers);
    }
  }
}

/** `results` with each run mapped to a number. */
export const pick = <T>(results: Readonly<Record<string, readonly T[]>>, of: (t: T) => number): Record<string, number[]> =>
  Object.fromEntries(Object.entries(results).map(([name, runs]) => [name, runs.map(of)]));
