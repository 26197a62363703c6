import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, RpcError, type ConnectionEvent } from '../../src/client/index.js';
import { probeOperations } from '../../src/operations/index.js';
import { runCli } from '../support/cli.js';
import { sampleOperations } from '../support/sample-ops.js';
import { ServerFixture, transportCases } from '../support/server-fixture.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { until } from '../support/wait.js';

// §4.9 through the SDK over real sockets: a relay cut in the middle of a call, and the
// call goes on with every item and every input once, in order.
for (const transport of transportCases.filter((t) => t.name.startsWith('WebSocket'))) {
  describe(`resumable calls over ${transport.name}`, () => {
    const fx = new ServerFixture();
    beforeAll(() => fx.start({ ...transport.server, operations: [...sampleOperations(fx.probe), ...probeOperations()] }).then(() => undefined));
    afterAll(() => fx.stop());

    async function throughRelay() {
      const url = transport.url(fx.server);
      const proxy = await new TcpProxy().start(Number(new URL(url).port));
      const client = await connect(proxy.via(url), { ...transport.options(fx.server), resume: { graceMs: 10_000 } });
      const events: ConnectionEvent['type'][] = [];
      client.on('reconnecting', (e) => events.push(e.type));
      client.on('resumed', (e) => events.push(e.type));
      return { proxy, client, events };
    }

    it('a stream cut in its middle resumes with every item once, in order', async () => {
      const { proxy, client, events } = await throughRelay();
      try {
        const seen: number[] = [];
        for await (const item of client.iterate<{ n: number }>('test/ticker', { count: 1500, intervalMs: 1 })) {
          seen.push(item.n);
          if (seen.length === 300) proxy.cut();
        }
        expect(seen).toEqual(Array.from({ length: 1500 }, (_, n) => n));
        expect(events).toEqual(['reconnecting', 'resumed']);
        await client.close();
        await until(() => fx.server.resumable.size === 0, 'the server forgot the call once its caller had everything');
      } finally {
        await proxy.stop();
      }
    });

    it('an input stream cut in its middle: the handler takes every input once, in order', async () => {
      const { proxy, client, events } = await throughRelay();
      try {
        const count = 3000;
        // Items large enough that some are on the wire when the relay is cut.
        async function* input() {
          for (let n = 0; n < count; n++) yield { n, pad: 'x'.repeat(2000) };
        }
        const seen: number[] = [];
        for await (const item of client.iterate<{ n: number }>('conformance/collect', {}, { input: input() })) {
          seen.push(item.n);
          if (seen.length === 700) proxy.cut();
        }
        expect(seen).toEqual(Array.from({ length: count }, (_, n) => 2 * n));
        expect(events).toEqual(['reconnecting', 'resumed']);
        await client.close();
      } finally {
        await proxy.stop();
      }
    });

    it('a call the server no longer has (it was killed and restarted) fails UNAVAILABLE, saying it could not be resumed, never ending as if complete', async () => {
      const serve = (port: number) => runCli(['serve', '--port', String(port), '--no-webtransport', '--conformance'], { stdin: 'ignore', env: { DOCKER_HOST: 'unix:///nonexistent' } });
      const first = serve(0);
      const url = (await first.waitFor(/ws:\/\/127\.0\.0\.1:\d+\/callwire/, 'stdout', 15_000)).trim();
      let second: ReturnType<typeof serve> | undefined;
      const client = await connect(url, { ...transport.options(fx.server), resume: { graceMs: 10_000 } });
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
}
