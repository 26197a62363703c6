import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadScenarios } from '../../src/conformance/index.js';
import { findDeno } from '../../src/webtransport/index.js';
import { cliPath, runCli, type CliRun } from '../support/cli.js';
import { dockerHost } from '../support/docker.js';
import { conformanceTokens, RUNNER_TOKEN, SCOPELESS_TOKEN } from './tokens.js';

const dir = tmpdir();

/** The scenarios that need a stream reset by the server, or a FIN or reset from Deno's client (see the HTTP/3 test below). */
const DENO_STREAM_END_SCENARIOS = [
  'envelope-002', 'limits-003', 'subscription-004',
  'webtransport-002', 'webtransport-003', 'webtransport-004', 'webtransport-005', 'webtransport-006',
  'webtransport-007', 'webtransport-020', 'webtransport-023', 'webtransport-026',
];

describe('callwire conformance <url> against callwire serve --conformance (both real processes)', () => {
  let server: CliRun;
  let wsUrl = '';
  let wtUrl = '';
  let certHash = '';
  beforeAll(async () => {
    const tokens = join(dir, `callwire-conformance-tokens-${process.pid}.json`);
    writeFileSync(tokens, JSON.stringify({ tokens: conformanceTokens }));
    server = runCli(['serve', '--port', '0', '--wt-port', '0', '--conformance', '--tokens', tokens, '--max-calls-in-flight', '64', '--keepalive', '2'], { env: { DOCKER_HOST: dockerHost } });
    wsUrl = (await server.waitFor(/ws:\/\/127\.0\.0\.1:\d+\/callwire/, 'stdout')).trim();
    wtUrl = (await server.waitFor(/https:\/\/127\.0\.0\.1:\d+\/callwire/, 'stdout')).trim();
    certHash = (await server.waitFor(/sha256 [0-9a-f]{64}/, 'stdout')).split(' ')[1]!;
    await server.waitFor(/docker +on:/, 'stdout');
  });
  afterAll(async () => {
    server.child.kill('SIGTERM');
    await server.exited;
  });

  for (const [name, url, extra] of [
    ['WebSocket (msgpack)', () => wsUrl, () => []],
    ['WebTransport over HTTP/2 (msgpack)', () => wtUrl, () => ['--cert-hash', certHash]],
  ] as const) {
    it(`passes every scenario over ${name}, with a JSON and a JUnit report`, async () => {
      const report = join(dir, `callwire-conformance-${process.pid}-${name.length}.json`);
      const junit = join(dir, `callwire-conformance-${process.pid}-${name.length}.xml`);
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
      // What is skipped is only what belongs to the other transport, and it says so.
      const other = url().startsWith('https')
        ? ['needs websocket (this run is over WebTransport)', 'needs http (plain HTTP is served on the WebSocket port; the WebSocket run checks it)']
        : ['needs webtransport (this run is over WebSocket)'];
      expect(results.filter((r) => r.status === 'skip' && !other.includes(r.message))).toEqual([]);
      expect(passed + skipped.length).toBe(results.length);
      expect(readFileSync(junit, 'utf8')).toMatch(/<testsuite name="conformance msgpack" tests="\d+" failures="0"/);
      expect(run.stdout).toMatch(new RegExp(`^${passed} passed, 0 failed, ${skipped.length} skipped$`, 'm'));
    }, 240_000);
  }

  it('over HTTP/3 through the Deno edge, run by Deno with its own WebTransport client: every scenario passes but those that need a reset, or a FIN from Deno\'s client', async () => {
    const deno = await findDeno();
    if ('reason' in deno) throw new Error(`no HTTP/3 client: ${deno.reason} (npm ci installs it)`);
    const report = join(dir, `callwire-conformance-${process.pid}-h3.json`);
    const run = spawn(deno.path, ['run', '-A', '--unstable-net', '--quiet', cliPath, '--token', RUNNER_TOKEN, '--cert-hash', certHash, 'conformance', wtUrl, '--scopeless-token', SCOPELESS_TOKEN, '--report', report], {
      stdio: 'ignore',
      env: { ...process.env, NO_COLOR: '1' },
    });
    await new Promise((resolve) => run.on('exit', resolve));
    const results = (JSON.parse(readFileSync(report, 'utf8')) as { results: { id: string; status: string; message: string }[] }).results;
    const failed = results.filter((r) => r.status === 'fail');
    // Two Deno 2.9.6 limits (README "HTTP/3"): its QUIC API has no way to reset a stream, so
    // the edge ends a stream the server resets (WT-3) with a FIN, which these scenarios do
    // not accept as a reset; and its WebTransport client sends neither FIN nor reset
    // (webtransport-002, -026). When Deno fixes either, this fails: unpin them.
    expect(failed.map((r) => r.id).sort()).toEqual([...DENO_STREAM_END_SCENARIOS].sort());
    for (const f of failed) expect(f.message).toMatch(/close|end cleanly|nothing came|liveCalls/);
    expect(results.filter((r) => r.status === 'pass').length).toBeGreaterThanOrEqual(70);
  }, 240_000);

  it('a newcomer\'s run against serve --conformance with default flags (no tokens, no engine): no failure, and each skip says why', async () => {
    const plain = runCli(['serve', '--port', '0', '--no-webtransport', '--conformance'], { env: { DOCKER_HOST: 'unix:///nonexistent.sock' } });
    try {
      const url = (await plain.waitFor(/ws:\/\/127\.0\.0\.1:\d+\/callwire/, 'stdout')).trim();
      const report = join(dir, `callwire-conformance-${process.pid}-newcomer.json`);
      const run = runCli(['conformance', url, '--report', report], { stdin: 'ignore' });
      const { code } = await run.exited;
      expect(run.stdout.split('\n').filter((l) => l.startsWith('FAIL'))).toEqual([]);
      expect(code).toBe(0);
      expect(run.stderr).toMatch(/server: auth: no tokens/);
      const results = (JSON.parse(readFileSync(report, 'utf8')) as { results: { id: string; status: string; message: string }[] }).results;
      const skip = (id: string): string | undefined => results.find((r) => r.id === id && r.status === 'skip')?.message;
      expect(skip('exec-001')).toMatch(/needs docker \(the server offers no docker\/container\/exec\)/);
      expect(skip('auth-001')).toMatch(/needs auth \(the server has no tokens/);
      expect(skip('websocket-020')).toMatch(/needs keepalive/);
      // limits-002 runs against the limit the server reports (4096 by default), not an assumed one.
      expect(results.find((r) => r.id === 'limits-002')?.status).toBe('pass');
    } finally {
      plain.child.kill('SIGTERM');
      await plain.exited;
    }
  }, 240_000);
});
