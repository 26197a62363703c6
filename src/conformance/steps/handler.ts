import type { ScenarioRun } from '../scenario-run.js';
import type { Step, StepKind } from '../scenario.js';

/** How long a step that waits for the callee waits, unless it says. */
export const DEFAULT_TIMEOUT_MS = 5000;

export type StepOf<K extends StepKind> = Extract<Step, { kind: K }>;

/** Runs one step of kind K, its placeholders already substituted; throws ScenarioFailure or ScenarioSkip. `index`: the round of an enclosing `repeat`. */
export type Handler<K extends StepKind> = (step: StepOf<K>, run: ScenarioRun, index: number | undefined) => Promise<void> | void;

/** One handler per step kind: a kind without one does not compile. */
export type Handlers = { readonly [K in StepKind]: Handler<K> };
