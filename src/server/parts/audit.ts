import type { Logger, ObserveCalls, ObserveRefusals, ObserveResumes } from '../../dispatcher/index.js';
import { AppendStream } from '../append-stream.js';
import { AuditFile } from '../audit-file.js';
import { auditLog } from '../audit-log.js';
import type { Teardown } from '../teardown.js';

export interface AuditOptions {
  /** Append one JSON line per call to this file (created mode 0600), or to stdout for `-` (docs/cli.md "Recording and audit"). */
  readonly auditPath?: string;
}

/** What the audit log may hold unwritten while the disk falls behind or fails (lines past it are counted as lost). */
const MAX_AUDIT_BUFFERED_BYTES = 16 * 1024 * 1024;

/**
 * Opens the audit log, before anything listens: a server asked to audit never serves a
 * call unaudited, and a path it cannot write stops it before it starts anything else.
 */
export function startAudit(options: AuditOptions, logger: Logger, teardown: Teardown): { observe: ObserveCalls; observeRefusals: ObserveRefusals; observeResumes: ObserveResumes } | undefined {
  const path = options.auditPath;
  if (path === undefined) return undefined;
  const out = path === '-' ? AppendStream.stdout('the audit log', MAX_AUDIT_BUFFERED_BYTES, logger) : AuditFile.open(path, MAX_AUDIT_BUFFERED_BYTES, logger);
  teardown.use(out);
  return auditLog(out);
}
