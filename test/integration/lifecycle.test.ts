import { firstValueFrom, take, toArray } from 'rxjs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { connect, RpcError } from '../../src/client-node/index.js';
import { ServerFixture, transportCases } from '../support/server-fixture.js';
import { skipTitle } from '../support/skip.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { UdpProxy } from '../support/udp-proxy.js';
import { until } from '../support/wait.js';

// One suite, every transport: the same lifecycles over real sockets (a carrier this machine cannot run is a recorded skip).
for (const transport of transportCases) {
  describe.skipIf(transport.missing !== undefined)(skipTitle(`lifecycles over ${transport.name}`, transport.missing), () => {
    const fx = new ServerFixture();
    beforeAll(() => fx.start(transport.server).then(() => undefined));
    afterEach(() => fx.settle());
    afterAll(() => fx.stop());

    it('unary call', async () => {
      const client = await fx.client(transport);
      expect(await client.call('test/echo', { text: 'héllo' })).toEqual({ text: 'héllo' });
    });

    it('subscription: every item in order, then completion', async () => {
      const client = await fx.client(transport);
      const items = await firstValueFrom(client.subscribe<{ n: number }>('test/ticker', { count: 20, intervalMs: 1 }).pipe(toArray()));
      expect(items).toEqual(Array.from({ length: 20 }, (_, n) => ({ n })));
    });

    it('unsubscribe aborts the call and the server tears the handler down', async () => {
      const client = await fx.client(transport);
      const before = fx.probe.teardowns;
      const first = await firstValueFrom(client.subscribe('test/ticker', { count: 1_000_000, intervalMs: 5 }).pipe(take(3), toArray()));
      expect(first).toHaveLength(3);
      await until(() => fx.probe.teardowns === before + 1, 'server-side teardown');
    });

    it('leaving a for-await loop early aborts the call', async () => {
      const client = await fx.client(transport);
      const before = fx.probe.teardowns;
      let seen = 0;
      for await (const item of client.iterate<{ n: number }>('test/ticker', { count: 1_000_000, intervalMs: 2 })) {
        expect(item.n).toBe(seen);
        if (++seen === 5) break;
      }
      await until(() => fx.probe.teardowns === before + 1, 'server-side teardown');
    });

    it('errors arrive as RpcError with code, retryable and details', async () => {
      const client = await fx.client(transport);
      const error = await client.call('test/fail', { mode: 'declared' }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RpcError);
      expect(error).toMatchObject({ code: 'WIDGET_MISSING', retryable: false, details: { widget: 'w1' } });
      const missing = await client.call('nope/nothing').catch((e: unknown) => e);
      expect(missing).toMatchObject({ code: 'NOT_FOUND' });
    });

    it('a deadline ends a call with TIMEOUT and cancels the handler', async () => {
      const client = await fx.client(transport);
      const aborts = fx.probe.aborts;
      const error = await client.call('test/sleep', { ms: 10_000 }, { deadlineMs: 50 }).catch((e: unknown) => e);
      expect(error).toMatchObject({ code: 'TIMEOUT', retryable: true });
      await until(() => fx.probe.aborts === aborts + 1, 'handler abort');
    });

    it('an AbortSignal cancels a unary call on both sides', async () => {
      const client = await fx.client(transport);
      const aborts = fx.probe.aborts;
      const controller = new AbortController();
      const pending = client.call('test/sleep', { ms: 10_000 }, { signal: controller.signal });
      await until(() => fx.liveCalls() === 1, 'call started');
      controller.abort();
      await expect(pending).rejects.toMatchObject({ code: 'CANCELLED' });
      await until(() => fx.probe.aborts === aborts + 1, 'server-side abort');
    });

    it('1,000 concurrent calls on one connection', async () => {
      const client = await fx.client(transport);
      const answers = await Promise.all(Array.from({ length: 1000 }, (_, i) => client.call<{ text: string }>('test/echo', { text: `m${i}` })));
      expect(answers.map((a) => a.text)).toEqual(Array.from({ length: 1000 }, (_, i) => `m${i}`));
    });

    it('a disconnect cancels every live subscription of the connection', async () => {
      const client = await fx.client(transport);
      const before = fx.probe.teardowns;
      const subs = Array.from({ length: 10 }, () => client.subscribe('test/ticker', { count: 1_000_000, intervalMs: 10 }).subscribe({ error: () => undefined }));
      await until(() => fx.liveCalls() === 10, '10 live calls');
      await client.close();
      await until(() => fx.probe.teardowns === before + 10, '10 teardowns');
      subs.forEach((s) => s.unsubscribe());
    });

    it('a lost connection (the network drops it; neither side closes) fails the calls on it with UNAVAILABLE, and the server aborts them', async () => {
      const url = transport.url(fx.server);
      // QUIC rides UDP: its loss is a relay that stops passing datagrams, found by the keepalive (§5.5).
      const quic = transport.server?.http3 === true;
      const proxy = await (quic ? new UdpProxy() : new TcpProxy()).start(Number(new URL(url).port));
      try {
        const client = await connect(proxy.via(url), transport.options(fx.server));
        const aborts = fx.probe.aborts;
        const pending = client.call('test/sleep', { ms: 10_000 });
        await until(() => fx.liveCalls() === 1, 'call started');
        proxy.cut();
        await expect(pending).rejects.toMatchObject({ code: 'UNAVAILABLE' });
        await until(() => fx.liveCalls() === 0 && fx.probe.aborts === aborts + 1, 'the server aborted the call (ABT-4)', quic ? 10_000 : 5000);
        await client.close();
      } finally {
        await proxy.stop();
      }
    });
  });
}
