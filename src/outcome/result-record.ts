import { RpcError } from '../protocol/index.js';
import { outcomes, type Boundary, type Outcome } from './outcome.js';

/** The one line `--json` prints (spec/cli/result-record.schema.json). */
export interface ResultRecord {
  kind: 'callwire.terminal';
  schema_version: '1.0';
  command: 'call' | 'exec';
  /** One target of a fan-out exec (`HOST/NAME` or `NAME`): its record says which. */
  target?: string;
  /** That target's owner: the subject that created it through callwire, null where callwire did not (absent for a name no list row showed). */
  owner?: string | null;
  outcome: Outcome;
  exit_code: number;
  failure_boundary: Boundary;
  operation: string;
  call_id: string | null;
  events_seen: number;
  output?: unknown;
  error?: { code: string; message: string; retryable: boolean };
  exec?: { exit_code: number | null; stdout_bytes: number; stderr_bytes: number; stdout?: string; stderr?: string; encoding: 'utf8' | 'base64'; truncated: boolean };
  diagnostics: { code: string; message: string }[];
  diagnostics_omitted: number;
}

export const DIAGNOSTICS_MAX = 16;
export const DIAGNOSTIC_MESSAGE_MAX_BYTES = 4096;
const TRUNCATED = '…[truncated]';

/** Caps diagnostics in count and message size, saying what was cut. */
export function boundDiagnostics(list: readonly { code: string; message: string }[]): { diagnostics: { code: string; message: string }[]; omitted: number } {
  const diagnostics = list.slice(0, DIAGNOSTICS_MAX).map((d) => ({ code: d.code, message: truncateUtf8(d.message, DIAGNOSTIC_MESSAGE_MAX_BYTES) }));
  return { diagnostics, omitted: Math.max(0, list.length - DIAGNOSTICS_MAX) };
}

// TextEncoder, not Buffer: the Lab builds the same result record in the browser.
function truncateUtf8(text: string, maxBytes: number): string {
  const bytes = new TextEncoder().encode(text);
  if (bytes.byteLength <= maxBytes) return text;
  const room = maxBytes - new TextEncoder().encode(TRUNCATED).byteLength;
  // Cut on a character boundary: drop continuation bytes at the cut.
  let end = room;
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
  return new TextDecoder().decode(bytes.subarray(0, end)) + TRUNCATED;
}

export function resultRecord(fields: Omit<ResultRecord, 'kind' | 'schema_version' | 'exit_code' | 'diagnostics' | 'diagnostics_omitted'> & {
  exit_code?: number;
  diagnostics?: { code: string; message: string }[];
}): ResultRecord {
  const { diagnostics, omitted } = boundDiagnostics(fields.diagnostics ?? []);
  const table = outcomes[fields.outcome];
  return {
    kind: 'callwire.terminal',
    schema_version: '1.0',
    ...fields,
    exit_code: fields.exit_code ?? (fields.command === 'exec' ? table.execExit : table.exit),
    diagnostics,
    diagnostics_omitted: omitted,
  };
}

/**
 * What a result record says of the error that ended a call: an RpcError's code, message
 * and retryability, and one diagnostic (coded by the outcome when the error has no code).
 */
export function errorFields(error: unknown, outcome: Outcome): Pick<ResultRecord, 'error' | 'diagnostics'> {
  const rpc = error instanceof RpcError ? error : undefined;
  const message = error instanceof Error ? error.message : String(error);
  return {
    ...(rpc ? { error: { code: rpc.code, message: rpc.message, retryable: rpc.retryable } } : {}),
    diagnostics: [{ code: rpc?.code ?? outcome, message }],
  };
}
