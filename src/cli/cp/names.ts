/**
 * How `callwire cp` shows names and sizes. A container chooses its own file names, so a
 * name is never printed raw: control characters would drive the terminal.
 */

/** `name` with C0/C1 control characters, DEL and backslash escaped (`\x1b`, `\n`, `\\`). */
export function escapeName(name: string): string {
  // Control characters are exactly what this matches.
  // eslint-disable-next-line no-control-regex
  return name.replace(/[\\\x00-\x1f\x7f-\x9f]/g, (c) => {
    const named: Record<string, string> = { '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t' };
    return named[c] ?? `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`;
  });
}

/** Any text shown (an error message that may quote a name): control characters escaped, backslashes left as they are, so a name escaped once stays readable. */
export function escapeControls(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\x00-\x08\x0b-\x1f\x7f-\x9f]/g, (c) => escapeName(c));
}
