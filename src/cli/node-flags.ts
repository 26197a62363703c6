import { setFlagsFromString } from 'node:v8';

/**
 * Node flags for a long-lived process that moves large streams: the server (`npm start`,
 * the bench's server) and a long-lived SDK client (the bench's own process).
 *
 * `--initial-old-space-size=128`: V8 otherwise sets its old-generation limit at about
 * twice the live heap, which for a server is small (about 24 MB live, limit 47 MB).
 * After a burst of large frames had gone through the old generation (10,000 items of
 * 64 KiB), every later exec's buffers started incremental marking again and again: 58
 * mark-compacts per 512 MiB where a fresh server ran 2, and 2.5–3× the server's CPU
 * per byte of exec output. With this floor the limit stays above that churn, for up to
 * 128 MB of uncollected old generation (bench/PROFILE.md). V8 reads it at startup only,
 * and NODE_OPTIONS refuses it, so it is on the command line of the process that serves.
 *
 * `--no-allocation-site-pretenuring`: V8 may decide, from what survived a few young
 * collections, that an allocation site's objects are long-lived and allocate them in the
 * old generation from then on. Where such old objects point to frames, the frames outlive
 * the young collections too and are freed only by a full one: a server streaming 64 KiB
 * items then ran a mark-compact about every 100 ms, at 1.6× its CPU per item, turn after
 * turn. Whether a site tips over depends on what the process did before: in
 * the bench, 9 of 34 servers that had streamed small items first fell into it, and none
 * of 20 with the flag (bench/PROFILE.md).
 */
export const longLivedNodeFlags: readonly string[] = ['--initial-old-space-size=128', '--no-allocation-site-pretenuring'];

/** The flags of `longLivedNodeFlags` this process was started without: a long-lived command's banner names them. */
export function missingLongLivedFlags(): string[] {
  return longLivedNodeFlags.filter((flag) => !process.execArgv.some((given) => given.split('=')[0] === flag.split('=')[0]));
}

/**
 * For a CLI process that is a client (exec, cp, subscribe, call): V8's incremental marking
 * off. Such a process keeps a small heap (~10 MB) while a stream's frames pass through it as
 * external buffers, and V8 began a marking cycle after nearly every young collection: 27
 * needless mark-compacts per 512 MiB of `exec` output, a quarter of the process's CPU
 * (bench/PROFILE.md "Exec"). Without it, the old generation is collected once it is full, in
 * one pause, a few milliseconds at this size. V8 reads the flag each time it would start
 * marking, so it takes effect after startup. A server keeps it: its heap is large.
 */
export function clientGarbageCollection(): void {
  setFlagsFromString('--no-incremental-marking');
}
