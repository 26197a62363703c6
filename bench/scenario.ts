/** A scenario of the bench: one measurement, run over every subject that can do it. */
import type { BenchContainer } from './container.js';
import type { BenchFleet } from './fleet.js';
import type { Lineup } from './lineup.js';
import type { Options } from './options.js';
import type { Recorder } from './rows.js';

/** What a scenario runs with. */
export interface Bench {
  readonly options: Options;
  readonly lineup: Lineup;
  readonly record: Recorder;
  readonly container: BenchContainer;
  /** The fleet (a NATS cluster, an agent, a gateway), started when a scenario first asks. */
  readonly fleet: BenchFleet;
}

export interface Scenario {
  /** What `--only` names it by (or by its group). */
  readonly id: string;
  /** The rows' group. */
  readonly group: string;
  /** Part of `--quick` (which runs it smaller). */
  readonly quick: boolean;
  /** Runs only when `--only` names it: a run of its own, its results a file of their own (the fleet's). */
  readonly alone?: boolean;
  /** Runs in a container: skipped when the server has no Docker engine. */
  readonly docker?: boolean;
  run(bench: Bench): Promise<void>;
}
