import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, RpcError, type Client, type ConnectionEvent, type ConnectOptions } from '../../src/client-node/index.js';
import { codecs, encodeFrame, envelopes, FrameDecoder } from '../../src/protocol/index.js';
import type { RunningServer } from '../../src/server/index.js';
import { openWebTransport } from '../../src/webtransport/index.js';
import { runCli } from '../support/cli.js';
import { freePort } from '../support/ports.js';
import { hasHttp3, http3Missing, ServerFixture, transportCases, type TransportCase } from '../support/server-fixture.js';
import { skipTitle } from '../support/skip.js';
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

/** A client that resumes its streams, and the reconnect events it hears, in order. */
async function resumingClient(url: string, options: ConnectOptions): Promise<{ client: Client; events: ConnectionEvent[] }> {
  const client = await connect(url, { ...options, resume: { graceMs: 30_000 } });
  const events: ConnectionEvent[] = [];
  client.on('reconnecting', (e) => events.push(e));
  client.on('resumed', (e) => events.push(e));
  return { client, events };
}

// §4.9 over real sockets, over every carrier: a call through a relay that is cut in its
// middle goes on over a new connection with every item once, in order.
for (const transport of transportCases) {
  describe.skipIf(transport.missing !== undefined)(skipTitle(`resumable calls over ${transport.name}`, transport.missing), () => {
    const fx = new ServerFixture();
    beforeAll(() => fx.start({ ...transport.server, conformance: true }).then(() => undefined));
    afterAll(() => fx.stop());

    it('a stream cut in its middle resumes with every item once, in order', async () => {
      const url = transport.url(fx.server);
      const proxy = await relayFor(transport, fx.server);
      try {
        const { client, events } = await resumingClient(proxy.via(url), transport.options(fx.server));
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
        const { client, events } = await resumingClient(proxy.via(url), transport.options(fx.server));
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

// The other ways a connection is lost: a silent peer found by the server's keepalive (§5.5),
// and a QUIC connection that times out under the client's HTTP/3 edge.
describe('losses the server or the client finds on its own', () => {
  const fx = new ServerFixture();
  beforeAll(() => fx.start({ keepaliveMs: 300, ...(hasHttp3 ? { http3: true } : {}) }).then(() => undefined));
  afterAll(() => fx.stop());

  for (const transport of transportCases.filter((t) => t.name.endsWith('msgpack') && t.server?.http3 !== true)) {
    it(`${transport.name}: a connection the keepalive finds silent detaches its resumable call, which the caller then resumes, every item once`, async () => {
      const url = transport.url(fx.server);
      const proxy = await new TcpProxy().start(Number(new URL(url).port));
      try {
        const client = await connect(proxy.via(url), { ...transport.options(fx.server), resume: { graceMs: 30_000 } });
        const seen: number[] = [];
        let frozen = false;
        for await (const item of client.iterate<{ n: number }>('test/ticker', { count: 1000, intervalMs: 2 })) {
          seen.push(item.n);
          if (!frozen && seen.length === 200) {
            frozen = true;
            proxy.freeze();
            // The client hears nothing and suspects nothing: only the server's keepalive can find this loss.
            await until(() => fx.server.resumable.detached === 1, 'the server detached the call');
            proxy.cut();
          }
        }
        expect(seen).toEqual(Array.from({ length: 1000 }, (_, n) => n));
        await client.close();
        await until(() => fx.server.resumable.size === 0, 'the server forgot the call');
      } finally {
        await proxy.stop();
      }
    });
  }

  it.skipIf(!hasHttp3)(skipTitle('HTTP/3: a connection that times out under the client\'s edge leaves the other HTTP/3 sessions of the process working', http3Missing), async () => {
    const h3 = transportCases.find((t) => t.name === 'WebTransport HTTP/3 msgpack')!;
    const url = h3.url(fx.server);
    const proxy = await new UdpProxy().start(Number(new URL(url).port));
    const lost = await connect(proxy.via(url), h3.options(fx.server));
    const other = await connect(url, h3.options(fx.server));
    try {
      const seen: number[] = [];
      let failed: unknown;
      const subscription = other.subscribe<{ n: number }>('test/ticker', { count: 1_000_000, intervalMs: 5 }).subscribe({ next: (item) => seen.push(item.n), error: (error: unknown) => (failed = error) });
      const pending = lost.call('test/sleep', { ms: 60_000 }).catch((error: unknown) => error);
      await until(() => seen.length > 0 && fx.liveCalls() === 2, 'both calls under way');
      proxy.cut();
      expect(await pending).toMatchObject({ code: 'UNAVAILABLE' });
      const after = seen.length;
      expect(await other.call('test/echo', { text: 'still here' })).toEqual({ text: 'still here' });
      await until(() => seen.length > after + 20, 'the other session streams on');
      expect(failed).toBeUndefined();
      subscription.unsubscribe();
    } finally {
      await lost.close();
      await other.close();
      await proxy.stop();
    }
  });
});

// WT-2 for a resumable call: the caller resetting its one stream is an abort, not a loss.
describe('a resumable call over WebTransport HTTP/2 whose stream the caller resets', () => {
  const fx = new ServerFixture();
  beforeAll(() => fx.start().then(() => undefined));
  afterAll(() => fx.stop());

  it('is aborted at once (WT-2), not detached; the session serves on', async () => {
    const { session } = await openWebTransport(`${fx.server.wtUrl!}/msgpack`, { certHash: fx.server.certHash!, transport: 'h2' });
    await session.ready;
    try {
      const codec = codecs.msgpack;
      const stream = await session.createBidirectionalStream();
      const writer = stream.writable.getWriter();
      const request = envelopes.requested('r1', { operationId: 'test/forever', input: null, credit: 1 << 20, resume: { grace_ms: 60_000 } });
      await writer.write(encodeFrame(codec.encode(request)));
      // Its first frames: the token, then items.
      const reader = stream.readable.getReader();
      const decoder = new FrameDecoder();
      const types: string[] = [];
      while (!types.includes('call.responded')) {
        const { value, done } = await reader.read();
        if (done) throw new Error('the stream ended');
        for (const body of decoder.push(value)) types.push((codec.decode(body) as { type: string }).type);
      }
      expect(types[0]).toBe('call.resumable');
      const teardowns = fx.probe.teardowns;
      await writer.abort(new Error('the caller resets its stream'));
      await until(() => fx.probe.teardowns === teardowns + 1 && fx.liveCalls() === 0, 'the server aborted the call');
      expect(fx.server.resumable.detached).toBe(0);
      // The session itself is untouched: another call on it is answered.
      const other = await session.createBidirectionalStream();
      const otherWriter = other.writable.getWriter();
      await otherWriter.write(encodeFrame(codec.encode(envelopes.requested('r2', { operationId: 'test/echo', input: { text: 'on' } }))));
      const otherReader = other.readable.getReader();
      const answer = new FrameDecoder();
      let first: { type: string } | undefined;
      while (!first) {
        const { value, done } = await otherReader.read();
        if (done) break;
        first = answer.push(value).map((body) => codec.decode(body) as { type: string })[0];
      }
      expect(first?.type).toBe('call.responded');
    } finally {
      session.close();
    }
  });
});

// A server killed (not shut down) and started again has no call to resume: the call fails, never ends as if complete.
describe('a resumable call whose server was killed and restarted', () => {
  it('a call the server no longer has (it was killed and restarted) fails UNAVAILABLE, saying it could not be resumed, never ending as if complete', async () => {
    const serve = (port: number) => runCli(['serve', '--port', String(port), '--no-webtransport', '--conformance'], { stdin: 'ignore', env: { DOCKER_HOST: 'unix:///nonexistent' } });
    // A port of this worker's own (test/support/ports.ts): the kernel's pick could be taken by
    // another test's outgoing connection while the server is down, and the restart then fail.
    const first = serve(await freePort('127.0.0.1'));
    const url = (await first.waitFor(/ws:\/\/127\.0\.0\.1:\d+\/callwire/, 'stdout', 15_000)).trim();
    let second: ReturnType<typeof serve> | undefined;
    const client = await connect(url, { ...{ codec: 'msgpack' as const }, resume: { graceMs: 10_000 } });
    const events: string[] = [];
    client.on('reconnecting', () => events.push('reconnecting'));
    try {
      let seen = 0;
      const outcome = await (async () => {
        for await (const _item of client.iterate('conformance/count', { count: 100_000, intervalMs: 5 })) {
          if (++seen === 20) {
            first.child.kill('SIGKILL');
            await first.exited;
            second = serve(Number(new URL(url).port));
            await second.waitFor(/ws:\/\/127\.0\.0\.1:\d+\/callwire/, 'stdout', 15_000);
          }
        }
        return 'completed';
      })().catch((error: unknown) => error);
      expect(outcome).toBeInstanceOf(RpcError);
      expect(outcome).toMatchObject({ code: 'UNAVAILABLE', message: expect.stringMatching(/could not be resumed/) });
      expect(events).toEqual(['reconnecting']);
    } finally {
      await client.close();
      first.child.kill('SIGKILL');
      second?.child.kill('SIGKILL');
      await Promise.all([first.exited, second?.exited]);
    }
  });
});
