/**
 * Waiters and the one who wakes them: a loop that has nothing to do awaits `wait()`,
 * and whatever gives it something to do calls `wake()`, which wakes every waiter (each
 * checks its own condition again). A wake with nobody waiting is not kept: a loop
 * checks its condition before it waits, so nothing is missed.
 */
export class Wakeup {
  private waiters: (() => void)[] = [];

  /** Someone waits: what it waits for is worth watching. */
  get waiting(): boolean {
    return this.waiters.length > 0;
  }

  wait(): Promise<void> {
    return new Promise<void>((resolve) => this.waiters.push(resolve));
  }

  wake(): void {
    const waiters = this.waiters;
    if (waiters.length === 0) return;
    this.waiters = [];
    for (const waiter of waiters) waiter();
  }
}
