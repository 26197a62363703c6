import type { RawEvent } from '../events.js';
import { mismatch } from '../match.js';
import { show } from '../show.js';
import { ScenarioFailure } from '../verdict.js';
import type { Handler } from './handler.js';
import { takeNext } from './read.js';

/** `collect`: reads a call's responded frames up to its terminal event, checking count, shape and order. */
export const collect: Handler<'collect'> = async (step, run) => {
  const spec = step.collect;
  const timeoutMs = step.timeoutMs ?? 60_000;
  const c = run.conn(step.on);
  let seen = 0;
  let joined = '';
  let last: unknown;
  const deadline = Date.now() + timeoutMs;
  const belongs = (e: RawEvent): boolean => e.kind === 'close' || ((e.kind === 'frame' || e.kind === 'stream-reset') && e.id === spec.id);
  for (;;) {
    const event = await takeNext(c, belongs, Math.max(0, deadline - Date.now()), step.ignoreCredit === true);
    if (!event) throw new ScenarioFailure(`collect ${spec.id}: no terminal event within ${timeoutMs} ms (${seen} items so far)`);
    if (event.kind !== 'frame') throw new ScenarioFailure(`collect ${spec.id}: ${show(event)} after ${seen} items`);
    const frame = event.value as { type?: string; payload?: { output?: Record<string, unknown> } };
    if (frame.type !== 'call.responded') {
      const m = mismatch(spec.terminal, frame);
      if (m) throw new ScenarioFailure(`collect ${spec.id}: terminal ${show(event)} does not match: ${m}`);
      if (spec.count !== undefined && seen !== spec.count) throw new ScenarioFailure(`collect ${spec.id}: expected ${spec.count} items, got ${seen}`);
      if (spec.joined && joined !== spec.joined.equals) throw new ScenarioFailure(`collect ${spec.id}: joined ${spec.joined.field} ${JSON.stringify(joined)}, expected ${JSON.stringify(spec.joined.equals)}`);
      const lastMismatch = spec.lastOutput === undefined ? undefined : mismatch(spec.lastOutput, last);
      if (lastMismatch) throw new ScenarioFailure(`collect ${spec.id}: last item: ${lastMismatch}`);
      return;
    }
    if (spec.output !== undefined) {
      const m = mismatch(spec.output, frame.payload?.output);
      if (m) throw new ScenarioFailure(`collect ${spec.id}: item ${seen}: ${m}`);
    }
    if (spec.seqField !== undefined && frame.payload?.output?.[spec.seqField] !== seen) {
      throw new ScenarioFailure(`collect ${spec.id}: item ${seen} out of order (${spec.seqField} = ${JSON.stringify(frame.payload?.output?.[spec.seqField])})`);
    }
    const piece = spec.joined ? frame.payload?.output?.[spec.joined.field] : undefined;
    if (typeof piece === 'string') joined += piece;
    last = frame.payload?.output;
    seen++;
  }
};
