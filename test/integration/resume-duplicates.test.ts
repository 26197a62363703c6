import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect } from '../../src/client-node/index.js';
import { startServer, type RunningServer } from '../../src/server/index.js';
import { mutatingProxy, type Listening } from '../conformance/mutants.js';

/**
 * The SDK's side of §4.9: "a caller drops a `call.responded` whose `seq` is not above the
 * last it received". No real server sends an item twice on one connection, so a proxy in
 * front of the real one does: every numbered item arrives twice, and the consumer must
 * still see each once.
 */
describe('the SDK against a callee that sends every resumable item twice', () => {
  let server: RunningServer;
  let proxy: Listening;
  let doubled = 0;

  beforeAll(async () => {
    server = await startServer({ port: 0, webTransportPort: false, docker: false, http3: false, conformance: true });
    proxy = await mutatingProxy(server.wsUrl, {
      toCaller: (frame) => {
        if (frame.type !== 'call.responded' || frame.payload?.['seq'] === undefined) return [frame];
        doubled++;
        return [frame, frame];
      },
    });
  });
  afterAll(async () => {
    await proxy.close();
    await server.close();
  });

  for (const codec of ['msgpack', 'json'] as const) {
    it(`yields each item once, in order (${codec})`, async () => {
      const client = await connect(proxy.url, { codec, resume: { graceMs: 10_000 } });
      try {
        const before = doubled;
        const seen: number[] = [];
        for await (const item of client.iterate<{ n: number }>('conformance/count', { count: 300 })) seen.push(item.n);
        // The proxy did double them all: what the consumer saw once arrived twice.
        expect(doubled - before).toBe(300);
        expect(seen).toEqual(Array.from({ length: 300 }, (_, n) => n));
      } finally {
        await client.close();
      }
    });
  }
});
