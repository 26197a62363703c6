import type { CallObserver, Logger, ObserveCalls } from '../dispatcher/index.js';

/**
 * One observer hook for the dispatcher out of several (the audit log, the
 * recorder). Each is fenced: one that throws is logged once and left out of that
 * call, and neither the call nor the other observers feel it.
 */
export function combineObservers(all: readonly ObserveCalls[], logger: Logger): ObserveCalls | undefined {
  if (all.length === 0) return undefined;
  let complained = false;
  const fenced = <A extends unknown[]>(fn: ((...args: A) => void) | undefined) =>
    (...args: A): void => {
      try {
        fn?.(...args);
      } catch (error) {
        if (complained) return;
        complained = true;
        logger.error('a call observer failed', { error: error instanceof Error ? error.message : String(error) });
      }
    };
  return (call) => {
    const observers: CallObserver[] = [];
    for (const observe of all) {
      let observer: CallObserver | undefined;
      fenced(() => (observer = observe(call)))();
      if (observer) observers.push(observer);
    }
    if (observers.length === 0) return undefined;
    const parts = observers.map((o) => ({ input: fenced(o.input), output: fenced(o.output), ended: fenced(o.ended) }));
    return {
      input: (item, bytes) => parts.forEach((p) => p.input(item, bytes)),
      output: (output, bytes) => parts.forEach((p) => p.output(output, bytes)),
      ended: (outcome) => parts.forEach((p) => p.ended(outcome)),
    };
  };
}
