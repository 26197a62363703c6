/**
 * SIGINT and SIGTERM as an AbortSignal, for commands that stop gracefully: the
 * first signal aborts; the handlers stay installed so a second one does not kill
 * the process before it has said why it stopped.
 */
export function signalController(): { signal: AbortSignal; which: () => NodeJS.Signals | undefined; dispose: () => void } {
  const controller = new AbortController();
  let received: NodeJS.Signals | undefined;
  const on = (name: NodeJS.Signals) => (): void => {
    received ??= name;
    controller.abort();
  };
  const int = on('SIGINT');
  const term = on('SIGTERM');
  process.on('SIGINT', int);
  process.on('SIGTERM', term);
  return {
    signal: controller.signal,
    which: () => received,
    dispose: () => {
      process.off('SIGINT', int);
      process.off('SIGTERM', term);
    },
  };
}
