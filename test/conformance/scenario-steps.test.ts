import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadScenarios, type Step } from '../../src/conformance/scenario.js';

/** A scenario directory holding one file, `area.json`, with one scenario of these steps. */
function dirWith(steps: unknown[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'callwire-scenario-steps-'));
  dirs.push(dir);
  writeFileSync(join(dir, 'area.json'), JSON.stringify([{ id: 'area-001', title: 't', covers: ['RES-1'], steps }]));
  return dir;
}
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const ping = { send: { type: 'call.requested', id: '$id:a', payload: { operationId: 'conformance/echo', input: null } } };

describe('a scenario file\'s steps, each of one kind', () => {
  it('are named by their kind, the one key that says what the step does, inside a repeat too', () => {
    const [loaded] = loadScenarios(dirWith([ping, { wait: 10 }, { repeat: { times: 2, steps: [ping] } }]));
    expect(loaded!.scenario.steps.map((s) => s.kind)).toEqual(['send', 'wait', 'repeat']);
    const repeat = loaded!.scenario.steps[2] as Extract<Step, { kind: 'repeat' }>;
    expect(repeat.repeat.steps[0]).toMatchObject({ kind: 'send', send: ping.send });
  });

  it('refuses a step of no known kind at load, naming it, rather than running a scenario that skips it', () => {
    expect(() => loadScenarios(dirWith([ping, { teleport: { to: 'mars' } }]))).toThrow(/^area\.json scenario 0: steps\.1: unknown step "teleport"/);
  });

  it('refuses a step of no known kind inside a repeat, naming it', () => {
    expect(() => loadScenarios(dirWith([{ repeat: { times: 2, steps: [ping, { sendd: {} }] } }]))).toThrow(/steps\.0\.repeat\.steps\.1: unknown step "sendd"/);
  });

  it('refuses a step with the keys of two kinds, naming both', () => {
    expect(() => loadScenarios(dirWith([{ ...ping, wait: 10 }]))).toThrow(/steps\.0: a step of two kinds: "send" and "wait"/);
  });

  it('still checks a known step\'s fields', () => {
    expect(() => loadScenarios(dirWith([{ ...ping, bogus: 1 }]))).toThrow(/steps\.0: Unrecognized key: "bogus"/);
  });

  it('has no kind the type does not know: an unknown kind does not compile', () => {
    // @ts-expect-error 'teleport' is no step kind
    const step: Step = { kind: 'teleport' };
    expect(step).toBeDefined();
  });
});
