import type { Logger } from '../server/index.js';

const levels = ['debug', 'info', 'warn', 'error'] as const;
export type LogLevel = (typeof levels)[number];

/** One line per event on stderr: `level message {fields}`. */
export function stderrLogger(min: LogLevel = 'info'): Logger {
  const at = levels.indexOf(min);
  const line = (level: LogLevel) => (message: string, fields?: Record<string, unknown>) => {
    if (levels.indexOf(level) < at) return;
    process.stderr.write(`[callwire] ${level} ${message}${fields ? ` ${JSON.stringify(fields)}` : ''}\n`);
  };
  return { debug: line('debug'), info: line('info'), warn: line('warn'), error: line('error') };
}
