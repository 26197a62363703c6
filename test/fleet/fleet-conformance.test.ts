import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadScenarios } from '../../src/conformance/index.js';
import { runCli } from '../support/cli.js';
import { Fleet, type GatewayRun } from '../support/fleet.js';
import { conformanceTokens, RUNNER_TOKEN, SCOPELESS_TOKEN } from '../conformance/tokens.js';

/**
 * The conformance suite, unchanged, against a fleet gateway: its Docker scenarios run
 * through an agent on NATS, the rest on the gateway itself, with the same flags as the
 * single server's CLI run (test/conformance/cli-runs.test.ts).
 */
describe('callwire conformance against a fleet gateway (serve --nats --conformance) with one agent', () => {
  let fleet: Fleet;
  let gateway: GatewayRun;
  const dir = mkdtempSync(join(tmpdir(), 'callwire-fleet-conformance-'));

  beforeAll(async () => {
    fleet = await Fleet.start({ hosts: ['a'], nodes: 1 });
    await fleet.agent('a');
    const tokens = join(dir, 'tokens.json');
    writeFileSync(tokens, JSON.stringify({ tokens: conformanceTokens }));
    gateway = await fleet.gateway({
      extraArgs: ['--conformance', '--tokens', tokens, '--max-calls-in-flight', '64', '--max-calls-per-identity', '128', '--handshake-timeout', '1', '--keepalive', '2'],
      waitHosts: ['a'],
    });
  }, 60_000);

  afterAll(async () => {
    await fleet?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('passes every scenario over WebSocket, the Docker ones through the agent', async () => {
    const report = join(dir, 'report.json');
    const run = runCli(['--token', RUNNER_TOKEN, 'conformance', gateway.wsUrl, '--scopeless-token', SCOPELESS_TOKEN, '--report', report], { stdin: 'ignore' });
    const { code } = await run.exited;
    expect(run.stdout.split('\n').filter((l) => l.startsWith('FAIL'))).toEqual([]);
    expect(code).toBe(0);
    const results = (JSON.parse(readFileSync(report, 'utf8')) as { results: { id: string; status: string; message: string }[] }).results;
    expect(results).toHaveLength(loadScenarios().length);
    // Only what needs the other transport is skipped; the Docker scenarios ran.
    expect(results.filter((r) => r.status === 'skip' && r.message !== 'needs webtransport (this run is over WebSocket)')).toEqual([]);
    expect(results.filter((r) => r.id.startsWith('docker-') && r.status === 'pass').length).toBeGreaterThan(0);
  }, 240_000);
});
