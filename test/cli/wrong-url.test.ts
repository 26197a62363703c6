import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import { ServerFixture } from '../support/server-fixture.js';

/** The URLs a newcomer gets wrong first, each answered with what is wrong and what works. */
describe('callwire with a wrong URL', () => {
  const fx = new ServerFixture();
  beforeAll(async () => {
    await fx.start();
  });
  afterAll(() => fx.stop());

  const run = async (url: string, ...flags: string[]): Promise<{ code: number | null; stderr: string }> => {
    const cli = runCli(['--url', url, ...flags, 'ops'], { stdin: 'ignore' });
    const { code } = await cli.exited;
    return { code, stderr: cli.stderr };
  };

  it('a wrong path is answered 404 by the server, and the CLI names the path it serves (no connect timeout)', async () => {
    const root = fx.server.wsUrl.replace('/callwire', '/');
    const { code, stderr } = await run(root);
    expect(stderr).toContain(`nothing serves WebSocket at ${root} (HTTP 404): callwire serves it at the path /callwire`);
    expect(stderr).not.toMatch(/within \d+ ms/);
    expect(code).not.toBe(0);
  });

  it('https:// to a self-signed server without --cert-hash says the certificate is not trusted, and names --cert-hash and the banner line', async () => {
    const { code, stderr } = await run(fx.server.wtUrl!, '--transport', 'h2');
    expect(stderr).toMatch(/could not connect to https:\/\/127\.0\.0\.1:\d+\/callwire: .*certificate is not trusted here: .*--cert-hash <sha256>.*'certificate sha256' line its banner prints/);
    expect(code).not.toBe(0);
    // With the hash, the same URL works: the hint is for the missing hash, not a broken server.
    const pinned = await run(fx.server.wtUrl!, '--transport', 'h2', '--cert-hash', fx.server.certHash!);
    expect(pinned.code, pinned.stderr).toBe(0);
  });

  it('a bare host:port is repeated as given, with the ws:// form that works; credentials before an @ are not repeated', async () => {
    const bare = await run('127.0.0.1:7070');
    expect(bare.stderr).toContain("not a URL: '127.0.0.1:7070'. A server's URL starts with ws://, wss:// or https://, as in ws://127.0.0.1:7070/callwire");
    expect(bare.code).not.toBe(0);
    const secret = await run('ws://user:hunter2@not a host');
    expect(secret.stderr).toContain("not a URL: 'not a host'");
    expect(secret.stderr).not.toContain('hunter2');
  });
});
