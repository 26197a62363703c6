import { exitCodeOf, summaryOf, type TargetResult } from '../contracts/index.js';

/** The line after a fan-out's per-target records (`callwire exec -l … --json`, docs/cli.md "Many containers"). */
export interface FanOutSummaryRecord {
  kind: 'callwire.fan-out';
  schema_version: '1.0';
  /** Targets counted, a host that did not answer the list as one (`HOST/*`). */
  targets: number;
  /** The fan-out's exit code: the largest of the targets', a target that did not run counting 123 (pdsh -S); what the CLI exits with, up to 255. */
  exit_code: number;
  /** How many targets ended with each exit code, and how many did not run. */
  exit_codes: Record<string, number>;
  not_run: number;
  /** Every target that did not exit 0: its exit code, or the error it did not run for. */
  failed: ({ target: string; exit_code: number } | { target: string; error: { code: string; message: string } })[];
  /** `summaryOf`'s line for people. */
  summary: string;
}

export function fanOutSummaryRecord(results: readonly TargetResult[]): FanOutSummaryRecord {
  const exitCodes: Record<string, number> = {};
  let notRun = 0;
  const failed: FanOutSummaryRecord['failed'] = [];
  for (const result of results) {
    if (result.exitCode === undefined) {
      notRun++;
      failed.push({ target: result.target, error: result.error ?? { code: 'INTERNAL', message: 'no exit code' } });
      continue;
    }
    exitCodes[String(result.exitCode)] = (exitCodes[String(result.exitCode)] ?? 0) + 1;
    if (result.exitCode !== 0) failed.push({ target: result.target, exit_code: result.exitCode });
  }
  return { kind: 'callwire.fan-out', schema_version: '1.0', targets: results.length, exit_code: exitCodeOf(results), exit_codes: exitCodes, not_run: notRun, failed, summary: summaryOf(results) };
}
