/**
 * The outcome of a one-shot call (not a TTY: the CLI's is cli/tty.ts), shared by
 * the CLI's `--json` line and exit code, the HTTP endpoints' last record and the Lab
 * (spec/cli/result-record.schema.json).
 */
export { outcomes, codeOutcomes, classify, precedence, CallerInputError, type Outcome, type Boundary, type Classified } from './outcome.js';
export { resultRecord, errorFields, boundDiagnostics, DIAGNOSTICS_MAX, DIAGNOSTIC_MESSAGE_MAX_BYTES, type ResultRecord } from './result-record.js';
export { execResultRecord, execEnded, execExitCode, type ExecCapture } from './exec.js';
export { fanOutSummaryRecord, type FanOutSummaryRecord } from './fan-out.js';
