import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadScenarios } from '../../src/conformance/index.js';
import { cliPath, runCli, type CliRun } from '../support/cli.js';
import { denoForTests } from '../support/deno-presence.js';
import { dockerHost } from '../support/docker.js';
import { http3Missing } from '../support/server-fixture.js';
import { skipTitle } from '../support/skip.js';
import { DENO_DEFECTS, unexplained } from './deno-defects.js';
import { conformanceTokens, RUNNER_TOKEN, SCOPELESS_TOKEN } from './tokens.js';

const dir = tmpdir();

/** The skips of a run over one transport that are the other transport's, each saying so: the only skips accepted besides a pinned defect's. */
function otherTransportSkips(url: string): string[] {
  return url.startsWith('https')
    ? ['needs websocket (this run is over WebTransport)', 'needs http (plain HTTP is served on the WebSocket port; the WebSocket run checks it)']
    : ['needs webtransport (this run is over WebSocket)'];
}

describe('callwire conformance <url> against callwire serve --conformance (both real processes)', () => {
  let server: CliRun;
  let wsUrl = '';
  let wtUrl = '';
  let certHash = '';
  beforeAll(async () => {
    const tokens = join(dir, `callwire-conformance-tokens-${process.pid}.json`);
    writeFileSync(tokens, JSON.stringify({ tokens: conformanceTokens }));
    server = runCli(['serve', '--port', '0', '--wt-port', '0', '--conformance', '--tokens', tokens, '--max-calls-in-flight', '64', '--max-calls-per-identity', '128', '--handshake-timeout', '1', '--keepalive', '2'], { env: { DOCKER_HOST: dockerHost } });
    wsUrl = (await server.waitFor(/ws:\/\/127\.0\.0\.1:\d+\/callwire/, 'stdout')).trim();
    wtUrl = (await server.waitFor(/https:\/\/127\.0\.0\.1:\d+\/callwire/, 'stdout')).trim();
    certHash = (await server.waitFor(/sha256 [0-9a-f]{64}/, 'stdout')).split(' ')[1]!;
    await server.waitFor(/docker +on:/, 'stdout');
  });
  afterAll(async () => {
    server.child.kill('SIGTERM');
    await server.exited;
  });

  for (const [name, url, extra, missing] of [
    ['WebSocket (msgpack)', () => wsUrl, () => [], undefined],
    ['WebTransport over HTTP/2 (msgpack)', () => wtUrl, () => ['--cert-hash', certHash, '--transport', 'h2'], undefined],
    ['WebTransport over HTTP/3 (msgpack)', () => wtUrl, () => ['--cert-hash', certHash, '--transport', 'h3'], http3Missing],
  ] as const) {
    it.skipIf(missing !== undefined)(skipTitle(`passes every scenario over ${name}, with a JSON and a JUnit report`, missing), async () => {
      const report = join(dir, `callwire-conformance-${process.pid}-${name.replace(/\W+/g, "-")}.json`);
      const junit = join(dir, `callwire-conformance-${process.pid}-${name.replace(/\W+/g, "-")}.xml`);
      const run = runCli(['--token', RUNNER_TOKEN, ...extra(), 'conformance', url(), '--scopeless-token', SCOPELESS_TOKEN, '--report', report, '--junit', junit], {
        stdin: 'ignore',
      });
      const { code } = await run.exited;
      expect(run.stdout.split('\n').filter((l) => l.startsWith('FAIL'))).toEqual([]);
      expect(code).toBe(0);
      const results = (JSON.parse(readFileSync(report, 'utf8')) as { results: { id: string; status: string; message: string }[] }).results;
      expect(results).toHaveLength(loadScenarios().length);
      const passed = results.filter((r) => r.status === 'pass').length;
      const skipped = results.filter((r) => r.status === 'skip').map((r) => r.id);
      // What is skipped is only what belongs to the other transport, and it says so; over HTTP/3,
      // through the Deno client edge, also what a pinned Deno defect names by id (./deno-defects.ts).
      const other = otherTransportSkips(url());
      const accounted = unexplained(name.includes('HTTP/3') ? 'node-through-edge' : undefined, results, (r) => r.status === 'skip' && other.includes(r.message));
      expect(accounted).toEqual({ unexplained: [], unpinned: [] });
      expect(passed + skipped.length).toBe(results.length);
      expect(readFileSync(junit, 'utf8')).toMatch(/<testsuite name="conformance msgpack" tests="\d+" failures="0"/);
      expect(run.stdout).toMatch(new RegExp(`^${passed} passed, 0 failed, ${skipped.length} skipped$`, 'm'));
    }, 240_000);
  }

  describe.skipIf(http3Missing !== undefined)(skipTitle('over HTTP/3 through the Deno edge, run by Deno with its own WebTransport client', http3Missing), () => {
    let results: { id: string; status: string; message: string }[] = [];
    beforeAll(async () => {
      const deno = await denoForTests();
      if ('reason' in deno) throw new Error(`no HTTP/3 client: ${deno.reason} (npm ci installs it)`);
      const report = join(dir, `callwire-conformance-${process.pid}-h3.json`);
      const run = spawn(deno.path, ['run', '-A', '--unstable-net', '--quiet', cliPath, '--token', RUNNER_TOKEN, '--cert-hash', certHash, 'conformance', wtUrl, '--scopeless-token', SCOPELESS_TOKEN, '--report', report], {
        stdio: 'ignore',
        env: { ...process.env, NO_COLOR: '1' },
      });
      await new Promise((resolve) => run.on('exit', resolve));
      results = (JSON.parse(readFileSync(report, 'utf8')) as { results: typeof results }).results;
    }, 240_000);

    it('every scenario passes but the other transport\'s, each saying so, and those a pinned Deno defect names by id, outcome and message', () => {
      expect(results).toHaveLength(loadScenarios().length);
      const other = otherTransportSkips(wtUrl);
      expect(unexplained('deno-webtransport', results, (r) => r.status === 'skip' && other.includes(r.message))).toEqual({ unexplained: [], unpinned: [] });
    });

    // Deno 2.9.6's defects (docs/http3.md "Upstream defects", listed in ./deno-defects.ts): the
    // scenarios they name cannot pass with its client. Each is reported skipped, with its
    // defect, while the defect shows; when Deno fixes it, the test fails: unpin it.
    for (const defect of DENO_DEFECTS.filter((d) => d.clients.includes('deno-webtransport'))) {
      for (const id of defect.scenarios) {
        it(`${id} (pinned: ${defect.id})`, (ctx) => {
          const result = results.find((r) => r.id === id);
          expect(result?.status, `${id} no longer ends ${defect.status} with Deno's client: unpin ${defect.id}`).toBe(defect.status);
          expect(result?.message).toMatch(defect.message);
          ctx.skip(`pinned upstream defect ${defect.id}: ${defect.what}`);
        });
      }
    }
  });

  describe('a newcomer\'s run against serve --conformance with default flags (no tokens, no engine), over every transport', () => {
    let plain: CliRun;
    let urls: { ws: string; wt: string; certHash: string };
    beforeAll(async () => {
      plain = runCli(['serve', '--port', '0', '--wt-port', '0', '--conformance'], { env: { DOCKER_HOST: 'unix:///nonexistent.sock' } });
      const ws = (await plain.waitFor(/ws:\/\/127\.0\.0\.1:\d+\/callwire/, 'stdout')).trim();
      const wt = (await plain.waitFor(/https:\/\/127\.0\.0\.1:\d+\/callwire/, 'stdout')).trim();
      urls = { ws, wt, certHash: (await plain.waitFor(/sha256 [0-9a-f]{64}/, 'stdout')).split(' ')[1]! };
    });
    afterAll(async () => {
      plain.child.kill('SIGTERM');
      await plain.exited;
    });

    for (const [name, args, missing] of [
      ['WebSocket', () => ['conformance', urls.ws], undefined],
      ['WebTransport over HTTP/2', () => ['--cert-hash', urls.certHash, '--transport', 'h2', 'conformance', urls.wt], undefined],
      ['WebTransport over HTTP/3', () => ['--cert-hash', urls.certHash, '--transport', 'h3', 'conformance', urls.wt], http3Missing],
    ] as const) {
      it.skipIf(missing !== undefined)(skipTitle(`over ${name}: no failure, and each skip says why`, missing), async () => {
        const report = join(dir, `callwire-conformance-${process.pid}-newcomer-${name.replace(/\W+/g, '-')}.json`);
        const run = runCli([...args(), '--report', report], { stdin: 'ignore' });
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
