/** A fan-out exec's results (SDK `execMany`, the CLI, HTTP and the Lab), and the exit code and summary they make. */
/** How one target of a fan-out ended: its exit code, or why it did not run to one. */
export interface TargetResult {
  readonly target: string;
  /** From the exec's terminal frame (EXEC-4); absent when the target did not run to its end. */
  readonly exitCode?: number;
  /** Why there is no exit code: the call's error code and message (a down host is `UNAVAILABLE`, naming it). */
  readonly error?: { readonly code: string; readonly message: string };
  readonly stdoutBytes: number;
  readonly stderrBytes: number;
}

/** The exit code a target that did not run counts as: pdsh -S's "could not run". */
export const NOT_RUN_EXIT_CODE = 123;

/** 0 when every target exited 0; otherwise the largest exit code, a target that did not run counting 123 (pdsh -S). */
export function exitCodeOf(results: readonly TargetResult[]): number {
  let largest = 0;
  for (const result of results) largest = Math.max(largest, result.exitCode ?? NOT_RUN_EXIT_CODE);
  return largest;
}

/**
 * One line for people: `12 targets: 10 exit 0, 1 exit 3 (a/web-2), 1 not run (b/web-1:
 * host b is down)`. Targets that exited 0 are counted, the others named (sorted); groups
 * by exit code ascending, then the targets that did not run.
 */
export function summaryOf(results: readonly TargetResult[]): string {
  const byCode = new Map<number, string[]>();
  const notRun: TargetResult[] = [];
  for (const result of results) {
    if (result.exitCode === undefined) notRun.push(result);
    else byCode.set(result.exitCode, [...(byCode.get(result.exitCode) ?? []), result.target]);
  }
  const parts = [...byCode.entries()]
    .sort(([a], [b]) => a - b)
    .map(([code, targets]) => `${targets.length} exit ${code}${code === 0 ? '' : ` (${targets.sort().join(', ')})`}`);
  notRun.sort((a, b) => (a.target < b.target ? -1 : a.target > b.target ? 1 : 0));
  if (notRun.length > 0) parts.push(`${notRun.length} not run (${notRun.map((r) => `${r.target}: ${r.error?.message ?? 'unknown'}`).join('; ')})`);
  const count = `${results.length} target${results.length === 1 ? '' : 's'}`;
  return parts.length === 0 ? count : `${count}: ${parts.join(', ')}`;
}
