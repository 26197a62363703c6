/**
 * This process's live heap and ArrayBuffer bytes, after a full collection: what a test
 * that bounds its own memory compares (tests run with --expose-gc, vitest.config.ts).
 *
 * Two collections, not one: V8 frees dead ArrayBuffers' memory on a background thread
 * after a collection, and `process.memoryUsage().arrayBuffers` counts them until it has.
 * The next collection first waits for that sweep, so the second reading no longer holds
 * megabytes just freed.
 */
export function liveBytes(): number {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) throw new Error('liveBytes needs --expose-gc (vitest.config.ts gives it to the test processes)');
  gc();
  gc();
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
}
