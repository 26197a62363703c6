/**
 * The bench's readings of `services/stats` (src/operations/services.ts): its count of
 * live calls, which counts the stats call itself, and of resumable calls (spec §4.9).
 */
import type { Client } from '../src/client/index.js';

export interface ServerStats {
  readonly liveCalls: number;
  /** Absent from a build that predates resumable calls. */
  readonly resumableCalls?: number;
  readonly detachedCalls?: number;
  readonly replayBytes?: number;
}

export const serverStats = (client: Client): Promise<ServerStats> => client.call<ServerStats>('services/stats');

export const liveCalls = async (client: Client): Promise<number> => (await serverStats(client)).liveCalls;

/** Whether the server keeps a call past its lost connection (a build that counts resumable calls). */
export const keepsCalls = async (client: Client): Promise<boolean> => (await serverStats(client)).resumableCalls !== undefined;

/**
 * Waits until the server's stats satisfy `test`; resolves with them. With `within`, fails
 * after that many ms saying what never happened, rather than leaving the bench hanging.
 */
export async function untilStats(client: Client, test: (stats: ServerStats) => boolean, pollMs = 100, within?: { ms: number; what: string }): Promise<ServerStats> {
  const deadline = within ? performance.now() + within.ms : Infinity;
  for (;;) {
    const stats = await serverStats(client);
    if (test(stats)) return stats;
    if (performance.now() > deadline) throw new Error(`${within!.what} within ${within!.ms} ms (the server's stats: ${JSON.stringify(stats)})`);
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}

/** Waits until the server holds at most (or at least, with `atLeast`) `n` live calls. */
export async function untilLiveCalls(client: Client, n: number, atLeast = false, pollMs = 100): Promise<void> {
  await untilStats(client, ({ liveCalls: live }) => (atLeast ? live >= n : live <= n), pollMs);
}
