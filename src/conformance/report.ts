import type { ScenarioResult } from './runner.js';

/** A pass/fail table, one line per scenario, for a terminal. */
export function table(results: readonly ScenarioResult[]): string {
  const lines = results.map((r) => {
    const mark = r.status === 'pass' ? 'PASS' : r.status === 'fail' ? 'FAIL' : 'SKIP';
    const detail = r.status === 'pass' ? `${r.ms} ms` : r.message;
    return `${mark}  ${r.id.padEnd(16)} ${r.title}${detail ? `  — ${detail}` : ''}`;
  });
  const count = (s: ScenarioResult['status']): number => results.filter((r) => r.status === s).length;
  lines.push('', `${count('pass')} passed, ${count('fail')} failed, ${count('skip')} skipped`);
  return lines.join('\n');
}

export function jsonReport(results: readonly ScenarioResult[], meta: Record<string, unknown>): string {
  return `${JSON.stringify({ ...meta, results }, null, 2)}\n`;
}

const xml = (s: string): string => s.replace(/[<>&"']/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;', "'": '&apos;' })[c]!);

export function junitReport(results: readonly ScenarioResult[], suite: string): string {
  const failures = results.filter((r) => r.status === 'fail').length;
  const skipped = results.filter((r) => r.status === 'skip').length;
  const cases = results.map((r) => {
    const body = r.status === 'fail' ? `<failure message="${xml(r.message)}"/>` : r.status === 'skip' ? `<skipped message="${xml(r.message)}"/>` : '';
    return `    <testcase classname="${xml(`${suite}.${r.area}`)}" name="${xml(`${r.id} ${r.title}`)}" time="${(r.ms / 1000).toFixed(3)}">${body}</testcase>`;
  });
  return `<?xml version="1.0" encoding="UTF-8"?>\n<testsuites>\n  <testsuite name="${xml(suite)}" tests="${results.length}" failures="${failures}" skipped="${skipped}">\n${cases.join('\n')}\n  </testsuite>\n</testsuites>\n`;
}
