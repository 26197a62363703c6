/**
 * The title of a test or describe that `describe.skipIf`/`it.skipIf` skips where
 * `missing` says what this machine lacks (Deno for HTTP/3, Chromium, network namespaces,
 * root): the skip is recorded with its reason in the report, never a case silently left
 * out of a list or an expectation quietly switched.
 */
export function skipTitle(title: string, missing: string | undefined): string {
  return missing === undefined ? title : `${title} (skipped: ${missing})`;
}
