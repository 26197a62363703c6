import { describe, expect, it } from 'vitest';
import { RpcError } from '../../src/client/index.js';
import { connect } from '../../src/client-node/index.js';
import { startServer, type RunningServer } from '../../src/server/index.js';
import { within } from '../support/wait.js';

/**
 * A server that is going away says so (spec §4.9): it closes each connection with 1001
 * `server shutting down`, and a resumable call on it fails at once, UNAVAILABLE, naming
 * the server, rather than waiting out its resume grace against a server that is gone.
 * The caller here stops reading, so the call's end is held behind the output it has no
 * credit for: the close is all the client hears. The grace is far longer than the test
 * may run, so only the close can end the call in time.
 */
describe('a server shutting down under a resumable call', () => {
  const cases = [
    { name: 'WebSocket', url: (s: RunningServer) => s.wsUrl, options: {}, webTransportPort: false as const },
    { name: 'WebTransport HTTP/2', url: (s: RunningServer) => s.wtUrl!, options: { transport: 'h2' as const }, webTransportPort: 0 },
  ];
  for (const c of cases) {
    it(`${c.name}: the call fails at once saying the server is shutting down, and the client does not reconnect`, async () => {
      const server = await startServer({ port: 0, webTransportPort: c.webTransportPort, http3: false, docker: false, conformance: true });
      const url = c.url(server);
      const client = await connect(url, { codec: 'msgpack', ...(server.certHash ? { certHash: server.certHash } : {}), ...c.options, resume: { graceMs: 120_000 } });
      let reconnecting = 0;
      client.on('reconnecting', () => reconnecting++);
      try {
        const items = client.iterate<{ n: number }>('conformance/count', { count: 100_000 }, { windowBytes: 4096 })[Symbol.asyncIterator]();
        expect((await items.next()).value).toEqual({ n: 0 });
        // The server fills the window while the caller reads nothing more.
        await new Promise((resolve) => setTimeout(resolve, 200));
        await server.close(0);
        // At once: far sooner than the grace, which a client that did not know the close would wait out.
        const ended = await within(
          (async () => {
            for (;;) if ((await items.next()).done) return undefined;
          })().catch((error: unknown) => error),
          5000,
          'the call ending with the server',
        );
        expect(ended).toBeInstanceOf(RpcError);
        expect((ended as RpcError).code).toBe('UNAVAILABLE');
        expect((ended as RpcError).message).toContain(`the server at ${url} is shutting down`);
        expect(reconnecting).toBe(0);
      } finally {
        await client.close();
        await server.close();
      }
    }, 30_000);
  }
});
