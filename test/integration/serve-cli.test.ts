import { describe, expect, it } from 'vitest';
import { longLivedNodeFlags } from '../../src/cli/node-flags.js';
import { connect } from '../../src/client-node/index.js';
import { runCli } from '../support/cli.js';
import { hasHttp3, http3Missing } from '../support/server-fixture.js';
import { skipTitle } from '../support/skip.js';

describe('callwire serve (what npm start runs)', () => {
  it('serves on loopback, prints how to connect, answers calls on both transports, and stops on SIGTERM', async () => {
    const run = runCli(['serve', '--port', '0', '--wt-port', '0']);
    try {
      const wsUrl = (await run.waitFor(/ws:\/\/127\.0\.0\.1:\d+\/callwire/, 'stdout')).trim();
      const wtUrl = (await run.waitFor(/https:\/\/127\.0\.0\.1:\d+\/callwire/, 'stdout')).trim();
      const hash = (await run.waitFor(/sha256 [0-9a-f]{64}/, 'stdout')).split(' ')[1]!;
      await run.waitFor(/npx callwire ops --url \S+/, 'stdout'); // the banner's last lines may come in a later chunk
      // The banner names the Lab, and that address serves it.
      const lab = /^ {2}Lab {11}(http:\/\/\S+)/m.exec(run.stdout)?.[1];
      expect(lab).toBe(wsUrl.replace(/^ws:/, 'http:').replace(/callwire$/, ''));
      expect(await (await fetch(lab!)).text()).toMatch(/<title>callwire Lab<\/title>/);
      // Started without npm start's Node flags, it says which are missing and why they matter.
      expect(run.stdout).toMatch(new RegExp(`^ {2}node {10}without ${longLivedNodeFlags.join(' ')}: large outputs cost more CPU`, 'm'));
      const viaWs = await connect(wsUrl);
      expect((await viaWs.listOperations()).map((o) => o.name)).toContain('services/list');
      // HTTP/2 always; HTTP/3 (which needs Deno) has its own test below.
      const viaWt = await connect(wtUrl, { certHash: hash, transport: 'h2' });
      expect(viaWt.carrier).toBe('http/2');
      expect((await viaWt.listOperations()).map((o) => o.name)).toContain('services/schema');
      await Promise.all([viaWs.close(), viaWt.close()]);
      run.child.kill('SIGTERM');
      expect(await run.exited).toEqual({ code: 0, signal: null });
      expect(run.stderr).toContain('SIGTERM');
    } finally {
      run.child.kill('SIGKILL');
    }
  });

  it.skipIf(!hasHttp3)(skipTitle('the defaults on both ends: serve offers HTTP/3, and the client\'s auto takes it', http3Missing), async () => {
    const run = runCli(['serve', '--port', '0', '--wt-port', '0']);
    try {
      // Generous: a CLI start on a loaded machine (its edge too) can take tens of seconds.
      const wtUrl = (await run.waitFor(/https:\/\/127\.0\.0\.1:\d+\/callwire/, 'stdout', 60_000)).trim();
      const hash = (await run.waitFor(/sha256 [0-9a-f]{64}/, 'stdout', 60_000)).split(' ')[1]!;
      const viaWt = await connect(wtUrl, { certHash: hash });
      expect(viaWt.carrier).toBe('http/3');
      expect((await viaWt.listOperations()).map((o) => o.name)).toContain('services/schema');
      await viaWt.close();
    } finally {
      run.child.kill('SIGTERM');
      await run.exited;
    }
  }, 120_000);

  it('refuses to listen on 0.0.0.0 without tokens, with a clear message', async () => {
    const run = runCli(['serve', '--host', '0.0.0.0', '--port', '0', '--wt-port', '0'], { env: { CALLWIRE_TOKENS: '', CALLWIRE_TOKENS_FILE: '' } });
    const { code } = await run.exited;
    expect(code).not.toBe(0);
    expect(run.stderr).toMatch(/^Error: refusing to listen on 0\.0\.0\.0 without tokens/m);
    expect(run.stdout).toBe('');
  });

  it('listens on 0.0.0.0 with tokens and never prints a token', async () => {
    const token = 'canary-serve-token-5f1e2d3c';
    const run = runCli(['serve', '--host', '0.0.0.0', '--port', '0', '--no-webtransport'], {
      env: { CALLWIRE_TOKENS: JSON.stringify({ tokens: [{ token, subject: 'ops', scopes: [] }] }) },
    });
    try {
      await run.waitFor(/ws:\/\/0\.0\.0\.0:\d+/, 'stdout');
      // The banner may come in several chunks: wait for its auth line rather than read stdout at once.
      expect(await run.waitFor(/auth +.*\n/, 'stdout')).toMatch(/auth +1 token\(s\)/);
    } finally {
      run.child.kill('SIGTERM');
      await run.exited;
    }
    expect(run.stdout + run.stderr).not.toContain(token);
  });
});
