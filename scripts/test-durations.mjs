// Writes test/durations.json (seconds per test file) from vitest's JSON report of a whole run,
// e.g. CI's reports/vitest.json: the order test/longest-first.ts starts files in, for a fresh
// clone, which has no vitest cache. `node scripts/test-durations.mjs reports/vitest.json`.
import { readFileSync, writeFileSync } from 'node:fs';
import { relative } from 'node:path';

const [reportPath] = process.argv.slice(2);
if (!reportPath) {
  console.error('usage: node scripts/test-durations.mjs <vitest JSON report>');
  process.exit(2);
}
const report = JSON.parse(readFileSync(reportPath, 'utf8'));
const seconds = report.testResults
  .map((file) => [relative(process.cwd(), file.name), Math.round((file.endTime - file.startTime) / 100) / 10])
  .sort(([a], [b]) => (a < b ? -1 : 1));
writeFileSync('test/durations.json', `${JSON.stringify(Object.fromEntries(seconds), null, 2)}\n`);
