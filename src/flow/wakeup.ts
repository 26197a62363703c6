/**
 * One waiter and the one who wakes it: a loop that has nothing to do awaits `wait()`,
 * and whatever gives it something to do calls `wake()`. A wake with nobody waiting is
 * not kept: a loop checks its condition before it waits, so nothing is missed.
 */
export class Wakeup {
  private waiter: (() => void) | undefined;

  /** Someone waits: what it waits for is worth watching. */
  get waiting(): boolean {
    return this.waiter !== undefined;
  }

  wait(): Promise<void> {
    return new Promise<void>((resolve) => (this.waiter = resolve));
  }

  wake(): void {
    const waiter = this.waiter;
    this.waiter = undefined;
    waiter?.();
  }
}
