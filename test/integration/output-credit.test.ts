import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServerFixture, transportCases } from '../support/server-fixture.js';
import { sleep, until } from '../support/wait.js';

const CHUNK_BYTES = 1024;
const WINDOW_BYTES = 16 * 1024;
const HELD_BYTES = 64 * 1024;
/**
 * What the server may pull ahead of a consumer that took one value: a window sent
 * (CR-5), and what waits for credit within maxBufferedBytesPerCall (BP-1), each
 * item at least a chunk, plus the item in hand and the one being pulled.
 */
const MOST_AHEAD = (WINDOW_BYTES + HELD_BYTES) / CHUNK_BYTES + 2;
/** Long enough that a stream granted on arrival would run far past MOST_AHEAD. */
const QUIET_MS = 500;

/**
 * The SDK grants output credit as the application consumes, not as frames arrive
 * (spec §4.8, CR-4): a loop that stops pulling holds the pull-based handler at the
 * server, seen here as how far `test/bytes` was pulled (`probe.produced`).
 */
describe('the SDK grants output credit on consumption (CR-4)', () => {
  for (const transport of [transportCases[0]!, transportCases[2]!]) {
    describe(transport.name, () => {
      const fx = new ServerFixture();
      beforeAll(() => fx.start({ limits: { maxBufferedBytesPerCall: HELD_BYTES } }));
      afterAll(() => fx.stop());

      it('a loop that stops pulling stops the producer within a window; pulling again resumes it', async () => {
        const client = await fx.client(transport);
        const produced = (): number => fx.probe.produced;
        const start = produced();
        const stream = client.iterate<{ data: Uint8Array }>('test/bytes', { totalBytes: 1024 * 1024 * 1024, chunkBytes: CHUNK_BYTES }, { windowBytes: WINDOW_BYTES })[Symbol.asyncIterator]();
        expect((await stream.next()).value?.data.byteLength).toBe(CHUNK_BYTES);
        // The window fills; then nothing more may be pulled while this loop takes nothing.
        await until(() => produced() - start >= WINDOW_BYTES / CHUNK_BYTES, 'the first window produced');
        await sleep(QUIET_MS);
        const held = produced() - start;
        expect(held).toBeLessThanOrEqual(MOST_AHEAD);

        // Taking the rest of the first window (it has arrived) grants credit back: the producer runs on.
        for (let i = 1; i < WINDOW_BYTES / CHUNK_BYTES; i++) await stream.next();
        await until(() => produced() - start > held, 'the producer pulled again');
        await stream.return?.();
        await fx.settle();
      });
    });
  }
});
