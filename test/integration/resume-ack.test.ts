import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect } from '../../src/client-node/index.js';
import { ServerFixture } from '../support/server-fixture.js';

/** Turns of the event loop, each one a poll for I/O: no timer of a millisecond need have come due. */
const turns = async (n: number): Promise<void> => {
  for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve));
};

// §4.9, RSM-3: the SDK acknowledges a resumable stream's items as they arrive. It does so
// in the turn of the event loop that received them, so the acknowledgement does not land
// at the callee a millisecond later, in the middle of whatever the caller sends next (an
// interactive exec's next keystroke). Client and server share this process, so the
// server's replay store is read directly.
describe('acknowledging a resumable stream', () => {
  const fx = new ServerFixture();
  beforeAll(() => fx.start({ conformance: true }).then(() => undefined));
  afterAll(() => fx.stop());

  it('a received item is acknowledged in the turn it arrived in, not on a timer after it', async () => {
    const client = await connect(fx.server.wsUrl, { codec: 'msgpack', resume: { graceMs: 30_000 } });
    try {
      const held: number[] = [];
      for await (const item of client.iterate<{ n: number }>('test/ticker', { count: 2, intervalMs: 300 })) {
        if (item.n !== 0) continue;
        held.push(fx.server.resumable.budget.bytes); // the item, kept until acknowledged
        for (let i = 0; i < 6 && fx.server.resumable.budget.bytes > 0; i++) await turns(1);
        held.push(fx.server.resumable.budget.bytes);
      }
      expect(held[0]).toBeGreaterThan(0);
      expect(held[1]).toBe(0);
    } finally {
      await client.close();
    }
  });
});
