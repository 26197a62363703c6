/**
 * Fails (exit 1) when a normative statement of spec/PROTOCOL.md has no conformance
 * scenario, or a scenario names a statement the spec does not have. Run by CI.
 */
import { coverage, loadScenarios } from '../src/conformance/index.js';

const c = coverage(loadScenarios().map((s) => s.scenario));
console.log(`conformance coverage: ${c.statements.length - c.uncovered.length}/${c.statements.length} normative statements (${c.percent.toFixed(0)}%)`);
for (const id of c.uncovered) console.log(`  uncovered: ${id}`);
for (const u of c.unknown) console.log(`  ${u.scenario} covers ${u.statement}, which spec/PROTOCOL.md does not define`);
process.exit(c.uncovered.length === 0 && c.unknown.length === 0 ? 0 : 1);
