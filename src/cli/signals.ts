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

/**
 * A server's stop signals: the first starts a graceful stop, a second one a person sends
 * later stops at once. One Ctrl-C can arrive twice: the terminal sends SIGINT to the whole
 * foreground group, and a parent that forwards it (npm start's scripts/start.mjs) sends
 * its copy a moment later; a copy within `burstMs` of the first is that same press.
 */
export function onShutdownSignals(graceful: (signal: NodeJS.Signals) => void, now: (signal: NodeJS.Signals) => void, burstMs = 1000): void {
  let firstAt: number | undefined;
  const on = (signal: NodeJS.Signals) => (): void => {
    if (firstAt === undefined) {
      firstAt = Date.now();
      graceful(signal);
    } else if (Date.now() - firstAt >= burstMs) now(signal);
  };
  process.on('SIGINT', on('SIGINT'));
  process.on('SIGTERM', on('SIGTERM'));
}
