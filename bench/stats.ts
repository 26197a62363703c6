/**
 * The bench's one reading of `services/stats` (src/operations/services.ts): its count of
 * live calls, which counts the stats call itself.
 */
import type { Client } from '../src/client/index.js';

export const liveCalls = async (client: Client): Promise<number> => (await client.call<{ liveCalls: number }>('services/stats')).liveCalls;

/** Waits until the server holds at most (or at least, with `atLeast`) `n` live calls. */
export async function untilLiveCalls(client: Client, n: number, atLeast = false, pollMs = 100): Promise<void> {
  for (;;) {
    const live = await liveCalls(client);
    if (atLeast ? live >= n : live <= n) return;
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}
