// Prints CI's closing line from vitest's JSON report. A lint or type-check failure
// counts as one failed check each, so the line never reads green when CI is red.
import { existsSync, readFileSync } from 'node:fs';

const [reportPath, failedSteps = '0'] = process.argv.slice(2);
let passed = 0;
let failed = Number(failedSteps);
let skipped = 0;
if (reportPath && existsSync(reportPath)) {
  const report = JSON.parse(readFileSync(reportPath, 'utf8'));
  passed = report.numPassedTests;
  failed += report.numFailedTests;
  skipped = report.numPendingTests + report.numTodoTests;
  if (report.numTotalTests === 0) failed += 1;
  if (report.success === false && report.numFailedTests === 0) failed += 1; // e.g. a suite failed to load
} else {
  failed += 1;
}
console.log(`${passed} passed, ${failed} failed, ${skipped} skipped`);
process.exit(failed === 0 ? 0 : 1);
