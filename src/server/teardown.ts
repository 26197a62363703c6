import { silentLogger, type Logger } from '../dispatcher/index.js';

/** What undoes one started part: a listener's close, a file's close, a gateway leaving its fleet. */
export type Undo = () => unknown;

/**
 * The one way a server comes down, as `AsyncDisposableStack` (which Node 20 lacks) is:
 * each part registers its undoing the moment it has started, and `dispose` runs them
 * newest first, each awaited before the next. A part that fails to start and `close()`
 * take the same path, so whatever started before a failure is undone by the code that
 * undoes it on a normal close. One undo that fails does not keep the others from running.
 */
export class Teardown {
  private readonly undos: Undo[] = [];
  private disposing: Promise<void> | undefined;

  constructor(private readonly logger: Logger = silentLogger) {}

  /** Registers what undoes the step just taken; it runs before everything registered earlier. */
  defer(undo: Undo): void {
    if (this.disposing) throw new Error('this server is closed: nothing more can start on it');
    this.undos.push(undo);
  }

  /** Registers `resource.close()` and returns the resource. */
  use<T extends { close(): unknown }>(resource: T): T {
    this.defer(() => resource.close());
    return resource;
  }

  /** Runs `start`; when it throws, undoes what it had started (newest first) and throws its error. */
  async attempt<T>(start: () => Promise<T>): Promise<T> {
    try {
      return await start();
    } catch (error) {
      // The start's own error is the one to report; an undo that fails on the way is logged.
      await this.dispose().catch((undoError: unknown) => this.logger.error('undoing a failed start failed', { error: String(undoError) }));
      throw error;
    }
  }

  /** Runs every undo, newest first, once (a second call gets the first's promise); rejects after all ran if any failed. */
  dispose(): Promise<void> {
    return (this.disposing ??= this.undoAll());
  }

  private async undoAll(): Promise<void> {
    const failures: unknown[] = [];
    for (let undo = this.undos.pop(); undo !== undefined; undo = this.undos.pop()) {
      try {
        await undo();
      } catch (error) {
        failures.push(error);
      }
    }
    if (failures.length === 1) throw failures[0];
    if (failures.length > 1) throw new AggregateError(failures, `${failures.length} parts of the server failed to close`);
  }
}
