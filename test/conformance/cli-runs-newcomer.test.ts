import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, it } from 'vitest';
import { runCli, type CliRun } from '../support/cli.js';
import { http3Missing } from '../support/server-fixture.js';
import { skipTitle } from '../support/skip.js';
import { CLI_RUNS, dir } from './cli-runs.js';

describe(CLI_RUNS, () => {
  // Each run waits on its scenarios' clocks far more than it computes (37 s of wall, 3 s of CPU
  // over WebSocket): the three run side by side, each against a server of its own, as three
  // newcomers would, so no run shares a limit or a counter with another.
  describe.concurrent('a newcomer\'s run against serve --conformance with default flags (no tokens, no engine), over every transport', () => {
    const servers: CliRun[] = [];
    /** `callwire serve --conformance` with default flags and no engine: its WebSocket and WebTransport URLs and certificate hash. */
    const plainServer = async (): Promise<{ ws: string; wt: string; certHash: string }> => {
      const plain = runCli(['serve', '--port', '0', '--wt-port', '0', '--conformance'], { env: { DOCKER_HOST: 'unix:///nonexistent.sock' } });
      servers.push(plain);
      const ws = (await plain.waitFor(/ws:\/\/127\.0\.0\.1:\d+\/callwire/, 'stdout')).trim();
      const wt = (await plain.waitFor(/https:\/\/127\.0\.0\.1:\d+\/callwire/, 'stdout')).trim();
      return { ws, wt, certHash: (await plain.waitFor(/sha256 [0-9a-f]{64}/, 'stdout')).split(' ')[1]! };
    };
    afterAll(async () => {
      for (const plain of servers) plain.child.kill('SIGTERM');
      await Promise.all(servers.map((plain) => plain.exited));
    });

    for (const [name, args, missing] of [
      ['WebSocket', (urls: { ws: string }) => ['conformance', urls.ws], undefined],
      ['WebTransport over HTTP/2', (urls: { wt: string; certHash: string }) => ['--cert-hash', urls.certHash, '--transport', 'h2', 'conformance', urls.wt], undefined],
      ['WebTransport over HTTP/3', (urls: { wt: string; certHash: string }) => ['--cert-hash', urls.certHash, '--transport', 'h3', 'conformance', urls.wt], http3Missing],
    ] as const) {
      it.skipIf(missing !== undefined)(skipTitle(`over ${name}: no failure, and each skip says why`, missing), async ({ expect }) => {
        const urls = await plainServer();
        const report = join(dir, `callwire-conformance-${process.pid}-newcomer-${name.replace(/\W+/g, '-')}.json`);
        const run = runCli([...args(urls), '--report', report], { stdin: 'ignore' });
        const { code } = await run.exited;
        expect(run.stdout.split('\n').filter((l) => l.startsWith('FAIL'))).toEqual([]);
        expect(code).toBe(0);
        expect(run.stderr).toMatch(/server: auth: no tokens/);
        const results = (JSON.parse(readFileSync(report, 'utf8')) as { results: { id: string; status: string; message: string }[] }).results;
        const skip = (id: string): string | undefined => results.find((r) => r.id === id && r.status === 'skip')?.message;
        expect(skip('exec-001')).toMatch(/needs docker \(the server offers no docker\/container\/exec\)/);
        expect(skip('auth-001')).toMatch(/needs auth \(the server has no tokens/);
        if (name === 'WebSocket') expect(skip('websocket-020')).toMatch(/needs keepalive/);
        // limits-002 runs against the limit the server reports (4096 by default), not an assumed
        // one; over WebTransport the call over it reaches the server on a stream of its own (WT-5).
        expect(results.find((r) => r.id === 'limits-002')?.status).toBe('pass');
      }, 240_000);
    }
  });
});
