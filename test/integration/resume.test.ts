import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type ConnectionEvent } from '../../src/client/index.js';
import { ServerFixture, transportCases } from '../support/server-fixture.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { until } from '../support/wait.js';

// §4.9 over real sockets: a stream through a relay that is cut in its middle goes on
// with every item once, in order.
for (const transport of transportCases.filter((t) => t.name.startsWith('WebSocket'))) {
  describe(`resumable calls over ${transport.name}`, () => {
    const fx = new ServerFixture();
    beforeAll(() => fx.start(transport.server).then(() => undefined));
    afterAll(() => fx.stop());

    it('a stream cut in its middle resumes with every item once, in order', async () => {
      const url = transport.url(fx.server);
      const proxy = await new TcpProxy().start(Number(new URL(url).port));
      try {
        const client = await connect(proxy.via(url), { ...transport.options(fx.server), resume: { graceMs: 10_000 } });
        const events: ConnectionEvent[] = [];
        client.on('reconnecting', (e) => events.push(e));
        client.on('resumed', (e) => events.push(e));
        const seen: number[] = [];
        let cut = false;
        for await (const item of client.iterate<{ n: number }>('test/ticker', { count: 1500, intervalMs: 1 })) {
          seen.push(item.n);
          if (!cut && seen.length === 300) {
            cut = true;
            proxy.cut();
          }
        }
        expect(seen).toEqual(Array.from({ length: 1500 }, (_, n) => n));
        expect(events.map((e) => e.type)).toEqual(['reconnecting', 'resumed']);
        await client.close();
        await until(() => fx.server.resumable.size === 0, 'the server forgot the call');
      } finally {
        await proxy.stop();
      }
    });
  });
}
