import type { CallObserver, CallOutcome, Logger, ObserveCalls, ObserveRefusals } from '../dispatcher/index.js';

/**
 * One observer hook for the dispatcher out of several (the metrics, the audit log,
 * the recorder). Each is fenced: one that throws is logged once, and neither the
 * call nor the other observers feel it. Its per-item path allocates nothing: it
 * runs for every item of every call.
 */
export function combineObservers(all: readonly ObserveCalls[], logger: Logger): ObserveCalls | undefined {
  if (all.length === 0) return undefined;
  const complain = complainOnce(logger);
  return (call) => {
    const observers: CallObserver[] = [];
    for (const observe of all) {
      try {
        const observer = observe(call);
        if (observer) observers.push(observer);
      } catch (error) {
        complain(error);
      }
    }
    if (observers.length === 0) return undefined;
    return {
      input(item: unknown, bytes: number) {
        for (let i = 0; i < observers.length; i++) {
          try {
            observers[i]!.input?.(item, bytes);
          } catch (error) {
            complain(error);
          }
        }
      },
      output(output: unknown, bytes: number) {
        for (let i = 0; i < observers.length; i++) {
          try {
            observers[i]!.output?.(output, bytes);
          } catch (error) {
            complain(error);
          }
        }
      },
      routed(host: string) {
        for (let i = 0; i < observers.length; i++) {
          try {
            observers[i]!.routed?.(host);
          } catch (error) {
            complain(error);
          }
        }
      },
      ended(outcome: CallOutcome) {
        for (let i = 0; i < observers.length; i++) {
          try {
            observers[i]!.ended?.(outcome);
          } catch (error) {
            complain(error);
          }
        }
      },
    };
  };
}

/** One hook for refused calls out of several, each fenced as `combineObservers` fences them. */
export function combineRefusalObservers(all: readonly ObserveRefusals[], logger: Logger): ObserveRefusals | undefined {
  if (all.length === 0) return undefined;
  const complain = complainOnce(logger);
  return (call) => {
    for (const observe of all) {
      try {
        observe(call);
      } catch (error) {
        complain(error);
      }
    }
  };
}

function complainOnce(logger: Logger): (error: unknown) => void {
  let complained = false;
  return (error) => {
    if (complained) return;
    complained = true;
    logger.error('a call observer failed', { error: error instanceof Error ? error.message : String(error) });
  };
}
