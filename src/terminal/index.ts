/**
 * The terminal outcome of a one-shot call, shared by the CLI's `--json` line and the
 * HTTP endpoints' last record (spec/cli/terminal-envelope.schema.json).
 */
export { outcomes, codeOutcomes, classify, execEnded, precedence, CallerInputError, type Outcome, type Boundary, type Classified } from './outcome.js';
export { envelope, errorFields, boundDiagnostics, DIAGNOSTICS_MAX, DIAGNOSTIC_MESSAGE_MAX_BYTES, type TerminalEnvelope } from './envelope.js';
