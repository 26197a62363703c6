import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { connect } from '../../src/client-node/index.js';
import { runCli, type CliRun } from '../support/cli.js';
import { hasHttp3, http3Missing } from '../support/server-fixture.js';
import { skipTitle } from '../support/skip.js';
import { udpFree } from '../support/udp-free.js';

const NATIVE_STAND_IN = fileURLToPath(new URL('../support/native-http3/register.mjs', import.meta.url));

/** A `callwire serve` on free ports: its WebTransport URL, its banner line for it, and its certificate hash. */
async function serve(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ run: CliRun; wtUrl: string; banner: string; certHash: string }> {
  const run = runCli(['serve', '--port', '0', '--wt-port', '0', ...args], { env: { DOCKER_HOST: 'unix:///nonexistent.sock', ...env } });
  runs.push(run);
  const banner = await run.waitFor(/https:\/\/127\.0\.0\.1:\d+\/callwire .*\n/, 'stdout', 30_000);
  const certHash = (await run.waitFor(/sha256 [0-9a-f]{64}/, 'stdout')).split(' ')[1]!;
  return { run, wtUrl: banner.split(' ')[0]!, banner, certHash };
}

const runs: CliRun[] = [];
afterEach(async () => {
  for (const run of runs.splice(0)) {
    run.child.kill('SIGTERM');
    await run.exited;
  }
});

const portOf = (url: string): number => Number(new URL(url).port);

describe('serve --no-http3: nothing listens for HTTP/3, whichever the provider', () => {
  // The library's native HTTP/3 package downloads its binary from outside the npm
  // registry and is not installed here: a stand-in (test/support/native-http3) takes its
  // place and holds the UDP port as the native server does.
  it('the native provider: by default it holds the WebTransport port over UDP; with --no-http3 nothing does', async () => {
    const env = { NODE_OPTIONS: `${process.env['NODE_OPTIONS'] ?? ''} --import=${NATIVE_STAND_IN}` };
    const on = await serve([], env);
    expect(on.banner).toMatch(/HTTP\/3 via the native fails-components transport/);
    expect(await udpFree('127.0.0.1', portOf(on.wtUrl))).toBe(false);

    const off = await serve(['--no-http3'], env);
    expect(off.banner).toMatch(/HTTP\/3 off: turned off \(--no-http3\)/);
    expect(await udpFree('127.0.0.1', portOf(off.wtUrl))).toBe(true);
  });

  it.skipIf(!hasHttp3)(skipTitle('the Deno edge: by default a call rides HTTP/3; with --no-http3 the UDP port is free and an HTTP/3 session fails', http3Missing), async () => {
    const on = await serve([]);
    expect(on.banner).toMatch(/HTTP\/3 via the Deno edge/);
    const client = await connect(on.wtUrl, { certHash: on.certHash, transport: 'h3' });
    try {
      expect(client.carrier).toBe('http/3');
      expect((await client.listOperations()).map((o) => o.name)).toContain('services/info');
    } finally {
      await client.close();
    }

    const off = await serve(['--no-http3']);
    expect(await udpFree('127.0.0.1', portOf(off.wtUrl))).toBe(true);
    await expect(connect(off.wtUrl, { certHash: off.certHash, transport: 'h3', connectTimeoutMs: 2000 })).rejects.toMatchObject({ code: 'UNAVAILABLE' });
  });
});
