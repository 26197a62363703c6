import { describe, expect, it } from 'vitest';
import { coverage, loadScenarios } from '../../src/conformance/index.js';
import { conformanceOver } from './conformance-over.js';

const scenarios = loadScenarios();

describe('the conformance suite itself', () => {
  it('covers every normative statement of spec/PROTOCOL.md, and names no statement that does not exist', () => {
    const c = coverage(scenarios.map((s) => s.scenario));
    expect(c.uncovered).toEqual([]);
    expect(c.unknown).toEqual([]);
    expect(c.percent).toBe(100);
    expect(c.statements.length).toBeGreaterThan(50);
  });

  it('has a scenario for every area the issue names', () => {
    const areas = new Set(scenarios.map((s) => s.area));
    for (const area of ['envelope', 'unary', 'subscription', 'abort', 'errors', 'deadlines', 'limits', 'codecs', 'discovery', 'docker-exec']) expect(areas).toContain(area);
  });
});

// WebTransport: conformance-wt-h2.test.ts and conformance-wt-h3.test.ts.
conformanceOver('WebSocket json');
