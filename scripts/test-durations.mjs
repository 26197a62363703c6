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
// test/longest-first.ts looks files up by their path from the root of the clone that runs them.
const outside = seconds.filter(([file]) => !file.startsWith('test/'));
if (outside.length > 0) {
  console.error(`the report's files are not under ./test (${outside[0][0]}): run this from the root of the clone the report came from`);
  process.exit(2);
}
writeFileSync('test/durations.json', `${JSON.stringify(Object.fromEntries(seconds), null, 2)}\n`);
