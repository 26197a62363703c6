import { readFileSync } from 'node:fs';
import type { Scenario } from './scenario.js';

export const defaultSpecFile = new URL('../../spec/PROTOCOL.md', import.meta.url).pathname;

/** Normative statement ids in the spec: `**[ABT-1]**`, in order of first appearance. */
export function statementIds(specText: string = readFileSync(defaultSpecFile, 'utf8')): string[] {
  return [...new Set([...specText.matchAll(/\*\*\[([A-Z]+-\d+)\]\*\*/g)].map((m) => m[1]!))];
}

export interface Coverage {
  readonly statements: readonly string[];
  readonly uncovered: readonly string[];
  /** Scenario `covers` entries that name no statement of the spec. */
  readonly unknown: readonly { scenario: string; statement: string }[];
  readonly percent: number;
}

export function coverage(scenarios: readonly Scenario[], specText?: string): Coverage {
  const statements = statementIds(specText);
  const covered = new Set(scenarios.flatMap((s) => s.covers));
  const known = new Set(statements);
  const uncovered = statements.filter((id) => !covered.has(id));
  const unknown = scenarios.flatMap((s) => s.covers.filter((c) => !known.has(c)).map((statement) => ({ scenario: s.id, statement })));
  return { statements, uncovered, unknown, percent: statements.length === 0 ? 100 : (100 * (statements.length - uncovered.length)) / statements.length };
}
