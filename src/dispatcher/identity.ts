/** Who is calling: a subject and its scopes, or `null` for an anonymous caller. */
export interface Identity {
  readonly subject: string;
  readonly scopes: readonly string[];
}

/** How a message names the callers of one identity (LIM-3): its subject, or every anonymous caller together. */
export function describeCaller(subject: string | null): string {
  return subject === null ? 'anonymous callers' : `identity "${subject}"`;
}

/** Structured logging; the library itself never writes to the console. */
export interface Logger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

const noop = (): void => undefined;
export const silentLogger: Logger = { debug: noop, info: noop, warn: noop, error: noop };

/** A logger whose every line carries `fields` as well. */
export function bindLogger(logger: Logger, fields: Record<string, unknown>): Logger {
  if (logger === silentLogger) return logger;
  return {
    debug: (m, f) => logger.debug(m, { ...fields, ...f }),
    info: (m, f) => logger.info(m, { ...fields, ...f }),
    warn: (m, f) => logger.warn(m, { ...fields, ...f }),
    error: (m, f) => logger.error(m, { ...fields, ...f }),
  };
}
