import { idOf, type RawEvent } from '../events.js';
import { mismatch } from '../match.js';
import { show } from '../show.js';
import { ScenarioFailure } from '../verdict.js';
import { DEFAULT_TIMEOUT_MS, type Handler } from './handler.js';
import { isCredit, takeNext } from './read.js';

/** `expect`: the next frame of the expected call (by id) must match: a `call.credit` is a frame like any other, unless the step ignores credit. */
export const expect: Handler<'expect'> = async (step, run) => {
  const expected = step.expect;
  const timeoutMs = step.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const id = idOf(expected);
  const belongs = (e: RawEvent): boolean => e.kind === 'close' || (e.kind === 'frame' && (id === undefined || e.id === id)) || (e.kind === 'stream-reset' && e.id === id);
  const event = await takeNext(run.conn(step.on), belongs, timeoutMs, step.ignoreCredit === true);
  if (!event) throw new ScenarioFailure(`expected ${JSON.stringify(expected)} within ${timeoutMs} ms; nothing came`);
  if (event.kind !== 'frame') throw new ScenarioFailure(`expected ${JSON.stringify(expected)}, got ${show(event)}`);
  const m = mismatch(expected, event.value);
  if (m) throw new ScenarioFailure(`frame ${show(event)} does not match: ${m}`);
  for (const [name, path] of Object.entries(step.capture ?? {})) {
    const value = path.split('.').reduce<unknown>((v, key) => (v !== null && typeof v === 'object' ? (v as Record<string, unknown>)[key] : undefined), event.value);
    if (value === undefined) throw new ScenarioFailure(`frame ${show(event)} has no ${path} to capture`);
    run.captured.set(name, value);
  }
};

/**
 * `expectUnordered`: the next N frames of the expected ids, in some order, must be
 * exactly the N expected ones: a frame that came before them (a terminal frame sent
 * too early) is one of the N and fails the match, rather than being passed over.
 */
export const expectUnordered: Handler<'expectUnordered'> = async (step, run) => {
  const expected = step.expectUnordered;
  const timeoutMs = step.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const c = run.conn(step.on);
  const ids = new Set(expected.map(idOf));
  const belongs = (e: RawEvent): boolean => e.kind === 'close' || (e.kind === 'frame' && (ids.has(undefined) || ids.has(e.id))) || (e.kind === 'stream-reset' && ids.has(e.id));
  const got: RawEvent[] = [];
  const deadline = Date.now() + timeoutMs;
  while (got.length < expected.length) {
    const event = await takeNext(c, belongs, Math.max(0, deadline - Date.now()), step.ignoreCredit === true);
    if (!event) throw new ScenarioFailure(`expected ${expected.length} frames in any order, got ${got.length} within ${timeoutMs} ms: ${got.map(show).join(' | ') || 'none'}`);
    if (event.kind !== 'frame') throw new ScenarioFailure(`expected ${expected.length} frames in any order, got ${show(event)} after ${got.length}`);
    got.push(event);
  }
  const values = got.map((e) => (e.kind === 'frame' ? e.value : undefined));
  if (!assignable(expected, values)) {
    throw new ScenarioFailure(`the next ${expected.length} frames ${got.map(show).join(' | ')} are not, in any order, ${JSON.stringify(expected)}`);
  }
};

/** `expectNone`: after `forMs`, no frame of the id is waiting. */
export const expectNone: Handler<'expectNone'> = async (step, run) => {
  await new Promise((resolve) => setTimeout(resolve, step.expectNone.forMs));
  const c = run.conn(step.on);
  const ofId = (e: RawEvent): boolean => e.kind === 'frame' && e.id === step.expectNone.id;
  if (step.ignoreCredit === true) while (await c.events.take((e) => ofId(e) && isCredit(e), 0));
  const extra = c.events.pending(ofId);
  if (extra.length > 0) throw new ScenarioFailure(`expected nothing more for ${step.expectNone.id}, got ${show(extra[0]!)}`);
};

/** `drain`: frames the callee sent before it read our last frame may still arrive: after `afterMs`, drop those of the id. */
export const drain: Handler<'drain'> = async (step, run) => {
  await new Promise((resolve) => setTimeout(resolve, step.drain.afterMs));
  const c = run.conn(step.on);
  while (await c.events.take((e) => e.kind === 'frame' && e.id === step.drain.id, 0));
};

/** Whether each expected matcher can take a distinct value (a perfect matching, by backtracking; N is small). */
function assignable(expected: readonly unknown[], values: readonly unknown[], used = new Set<number>(), at = 0): boolean {
  if (at === expected.length) return true;
  for (let i = 0; i < values.length; i++) {
    if (used.has(i) || mismatch(expected[at], values[i]) !== undefined) continue;
    used.add(i);
    if (assignable(expected, values, used, at + 1)) return true;
    used.delete(i);
  }
  return false;
}
