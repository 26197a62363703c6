import { mismatch } from '../match.js';
import type { ScenarioRun } from '../scenario-run.js';
import type { Step } from '../scenario.js';
import { ScenarioFailure } from '../verdict.js';
import type { Handler } from './handler.js';

export type SideCall = Extract<Step, { kind: 'sideCall' }>['sideCall'];

/** A unary call on a fresh connection, its output matched; with `withinMs`, called again until it matches: a state the callee reaches, on a carrier of any speed. */
export async function checkSideCall(run: ScenarioRun, spec: SideCall): Promise<void> {
  const { operationId, input, expectOutput, withinMs = 0 } = spec;
  const until = Date.now() + withinMs;
  for (;;) {
    const m = mismatch(expectOutput, await run.unary(operationId, input ?? null));
    if (!m) return;
    if (Date.now() >= until) throw new ScenarioFailure(`${operationId}: ${m}${withinMs > 0 ? ` (still, after ${withinMs} ms)` : ''}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

export const sideCall: Handler<'sideCall'> = (step, run) => checkSideCall(run, step.sideCall);
