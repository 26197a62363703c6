/**
 * A request's path, or undefined when its target is no URL at all (`//[`): the parse runs
 * inside an HTTP server's event handler, where a throw would end the process.
 */
export function requestPath(target: string | undefined): string | undefined {
  const url = URL.parse(target ?? '/', 'http://x');
  return url?.pathname;
}
