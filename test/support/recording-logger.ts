import type { Logger } from '../../src/dispatcher/index.js';

/** One line a `Logger` was given. */
export interface LoggedLine {
  readonly level: string;
  readonly message: string;
  readonly fields?: Record<string, unknown>;
}

/** A `Logger` that keeps every line it is given, in order, in `lines`. */
export function recordingLogger(): { logger: Logger; lines: LoggedLine[] } {
  const lines: LoggedLine[] = [];
  const log = (level: string) => (message: string, fields?: Record<string, unknown>) => void lines.push({ level, message, ...(fields ? { fields } : {}) });
  return { logger: { debug: log('debug'), info: log('info'), warn: log('warn'), error: log('error') }, lines };
}
