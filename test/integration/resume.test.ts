import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type ConnectionEvent } from '../../src/client/index.js';
import type { RunningServer } from '../../src/server/index.js';
import { hasHttp3, ServerFixture, transportCases, type TransportCase } from '../support/server-fixture.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { UdpProxy } from '../support/udp-proxy.js';
import { until } from '../support/wait.js';

/** A relay that loses the connections through it and lets the next one through. */
interface Relay {
  via(url: string): string;
  /** Loses the connections open now. */
  cut(): void;
  stop(): Promise<void>;
}

/**
 * TCP: both sides hear the loss at once. QUIC: only the client's datagrams stop, so the
 * server's keepalive finds the loss before the client's idle timeout does, and the call
 * waits detached on the server until the client comes back (not taken from a session the
 * server has not yet found gone).
 */
async function relayFor(transport: TransportCase, server: RunningServer): Promise<Relay> {
  const port = Number(new URL(transport.url(server)).port);
  if (transport.server?.http3 !== true) return new TcpProxy().start(port);
  const udp = await new UdpProxy().start(port);
  return { via: (url) => udp.via(url), cut: () => udp.cut('from-client'), stop: () => udp.stop() };
}

// §4.9 over real sockets, over every carrier: a call through a relay that is cut in its
// middle goes on over a new connection with every item once, in order.
for (const transport of transportCases.filter((t) => hasHttp3 || t.server?.http3 !== true)) {
  describe(`resumable calls over ${transport.name}`, () => {
    const fx = new ServerFixture();
    beforeAll(() => fx.start({ ...transport.server, conformance: true }).then(() => undefined));
    afterAll(() => fx.stop());

    it('a stream cut in its middle resumes with every item once, in order', async () => {
      const url = transport.url(fx.server);
      const proxy = await relayFor(transport, fx.server);
      try {
        const client = await connect(proxy.via(url), { ...transport.options(fx.server), resume: { graceMs: 30_000 } });
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

    it('a connection the caller closes ends its resumable call at once (ABT-4): cancelled, its record gone', async () => {
      const client = await connect(transport.url(fx.server), { ...transport.options(fx.server), resume: { graceMs: 60_000 } });
      const aborts = fx.probe.aborts;
      const seen: number[] = [];
      const subscription = client.subscribe<{ n: number }>('test/ticker', { count: 1_000_000, intervalMs: 5 }).subscribe({ next: (item) => seen.push(item.n), error: () => undefined });
      try {
        await until(() => seen.length >= 5 && fx.server.resumable.size === 1, 'the call is under way');
        await client.close();
        await until(() => fx.probe.aborts === aborts + 1 && fx.server.resumable.size === 0, 'the server cancelled the call and forgot it');
      } finally {
        subscription.unsubscribe();
      }
    });

    it('an input stream cut in its middle: every input item is processed once, in order', async () => {
      const url = transport.url(fx.server);
      const proxy = await relayFor(transport, fx.server);
      try {
        const client = await connect(proxy.via(url), { ...transport.options(fx.server), resume: { graceMs: 30_000 } });
        const events: ConnectionEvent[] = [];
        client.on('reconnecting', (e) => events.push(e));
        client.on('resumed', (e) => events.push(e));
        const total = 600;
        let cutDone!: () => void;
        const afterCut = new Promise<void>((resolve) => (cutDone = resolve));
        // Half the input goes before the cut; the rest is produced while, and after, the connection is down.
        async function* input(): AsyncGenerator<{ n: number }> {
          for (let n = 0; n < total; n++) {
            if (n === total / 2) await afterCut;
            yield { n };
          }
        }
        const seen: number[] = [];
        for await (const item of client.iterate<{ n: number }>('conformance/collect', {}, { input: input() })) {
          seen.push(item.n / 2);
          if (seen.length === total / 2 - 50) {
            proxy.cut();
            cutDone();
          }
        }
        expect(seen).toEqual(Array.from({ length: total }, (_, n) => n));
        expect(events.map((e) => e.type)).toEqual(['reconnecting', 'resumed']);
        await client.close();
        await until(() => fx.server.resumable.size === 0, 'the server forgot the call');
      } finally {
        await proxy.stop();
      }
    });
  });
}
