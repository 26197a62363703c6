import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { loadScenarios } from '../../src/conformance/index.js';
import { runCli, type CliRun } from '../support/cli.js';
import { dockerHost } from '../support/docker.js';
import { http3Missing } from '../support/server-fixture.js';
import { skipTitle } from '../support/skip.js';
import { unexplained } from './deno-defects.js';
import { conformanceTokens, RUNNER_TOKEN, SCOPELESS_TOKEN } from './tokens.js';

/**
 * `callwire conformance <url>` against `callwire serve --conformance`, both real processes.
 * One file per transport (cli-runs*.test.ts), each with a server of its own, so the
 * transports run in parallel workers.
 */

export const CLI_RUNS = 'callwire conformance <url> against callwire serve --conformance (both real processes)';
/** The tokens and reports of the file that imports this, removed after its last test. */
export const dir = mkdtempSync(join(tmpdir(), 'callwire-conformance-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The skips of a run over one transport that are the other transport's, each saying so: the only skips accepted besides a pinned defect's. */
export function otherTransportSkips(url: string): string[] {
  return url.startsWith('https')
    ? ['needs websocket (this run is over WebTransport)', 'needs http (plain HTTP is served on the WebSocket port; the WebSocket run checks it)']
    : ['needs webtransport (this run is over WebSocket)'];
}

export interface ConformanceServe {
  wsUrl: string;
  wtUrl: string;
  certHash: string;
}

/** `callwire serve --conformance` with tokens and the engine, for the enclosing describe: its URLs once beforeAll has run. */
export function useConformanceServe(): ConformanceServe {
  const served: ConformanceServe = { wsUrl: '', wtUrl: '', certHash: '' };
  let server: CliRun;
  beforeAll(async () => {
    const tokens = join(dir, `callwire-conformance-tokens-${process.pid}.json`);
    writeFileSync(tokens, JSON.stringify({ tokens: conformanceTokens }));
    server = runCli(['serve', '--port', '0', '--wt-port', '0', '--conformance', '--tokens', tokens, '--max-calls-in-flight', '64', '--max-calls-per-identity', '128', '--handshake-timeout', '1', '--keepalive', '2'], { env: { DOCKER_HOST: dockerHost } });
    served.wsUrl = (await server.waitFor(/ws:\/\/127\.0\.0\.1:\d+\/callwire/, 'stdout')).trim();
    served.wtUrl = (await server.waitFor(/https:\/\/127\.0\.0\.1:\d+\/callwire/, 'stdout')).trim();
    served.certHash = (await server.waitFor(/sha256 [0-9a-f]{64}/, 'stdout')).split(' ')[1]!;
    await server.waitFor(/docker +on:/, 'stdout');
  });
  afterAll(async () => {
    server.child.kill('SIGTERM');
    await server.exited;
  });
  return served;
}

export type CliTransport = 'WebSocket (msgpack)' | 'WebTransport over HTTP/2 (msgpack)' | 'WebTransport over HTTP/3 (msgpack)';

/** The test that one `callwire conformance` run over `transport` passes every scenario that applies. */
export function passesEveryScenario(served: ConformanceServe, transport: CliTransport): void {
  const wsUrl = (): string => served.wsUrl;
  const wtUrl = (): string => served.wtUrl;
  const certHash = (): string => served.certHash;
  for (const [name, url, extra, missing] of [
    ['WebSocket (msgpack)', wsUrl, () => [], undefined],
    ['WebTransport over HTTP/2 (msgpack)', wtUrl, () => ['--cert-hash', certHash(), '--transport', 'h2'], undefined],
    ['WebTransport over HTTP/3 (msgpack)', wtUrl, () => ['--cert-hash', certHash(), '--transport', 'h3'], http3Missing],
  ] as const) {
    if (name !== transport) continue;
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

}
