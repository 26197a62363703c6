/**
 * The outcome of a one-shot call (not a TTY: the CLI's is cli/terminal.ts), shared by
 * the CLI's `--json` line and exit code, the HTTP endpoints' last record and the Lab
 * (spec/cli/terminal-envelope.schema.json).
 */
export { outcomes, codeOutcomes, classify, precedence, CallerInputError, type Outcome, type Boundary, type Classified } from './outcome.js';
export { envelope, errorFields, boundDiagnostics, DIAGNOSTICS_MAX, DIAGNOSTIC_MESSAGE_MAX_BYTES, type TerminalEnvelope } from './envelope.js';
export { execEnvelope, execEnded, execExitCode, type ExecCapture } from './exec.js';
