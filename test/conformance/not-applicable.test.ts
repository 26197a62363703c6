import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, type CliRun } from '../support/cli.js';
import { dockerHost } from '../support/docker.js';

interface Reported {
  results: { id: string; status: 'pass' | 'fail' | 'skip'; message: string }[];
}

/**
 * A newcomer points `callwire conformance` at the server `npm start` runs (plain `serve`,
 * without the probe operations): the scenarios that can run, run; those that drive
 * conformance/* are not applicable, each saying why and how to enable them, and the exit
 * code says "incomplete" (8), not "non-conforming" (1).
 */
describe('callwire conformance against a plain serve', () => {
  let serve: CliRun;
  let url = '';
  const dir = mkdtempSync(join(tmpdir(), 'callwire-not-applicable-'));
  beforeAll(async () => {
    serve = runCli(['serve', '--port', '0', '--no-webtransport'], { stdin: 'ignore', env: { DOCKER_HOST: dockerHost } });
    url = (await serve.waitFor(/ws:\/\/127\.0\.0\.1:\d+\/callwire/, 'stdout', 30_000)).trim();
  });
  afterAll(async () => {
    serve?.child.kill('SIGTERM');
    await serve?.exited;
    rmSync(dir, { recursive: true, force: true });
  });

  it('runs what applies, reports the rest not applicable with the way to enable it, and exits 8 (incomplete) with one line saying so', async () => {
    const report = join(dir, 'report.json');
    const run = runCli(['conformance', url, '--only', 'websocket', '--report', report], { stdin: 'ignore' });
    const { code } = await run.exited;
    const { results } = JSON.parse(readFileSync(report, 'utf8')) as Reported;
    expect(results.filter((r) => r.status === 'fail'), run.stdout).toEqual([]);
    const notApplicable = results.filter((r) => r.status === 'skip' && r.message.includes('probe operations conformance/*'));
    expect(notApplicable.length).toBeGreaterThan(0);
    for (const r of notApplicable) expect(r.message).toContain('callwire serve --conformance serves them');
    expect(results.filter((r) => r.status === 'pass').length).toBeGreaterThan(0);
    expect(run.stderr).toContain('[callwire] server: probes: no probe operations conformance/*');
    expect(run.stderr).toContain(`[callwire] incomplete: ${notApplicable.length} scenario(s) not applicable: this server does not serve the probe operations conformance/* they drive; run it with callwire serve --conformance to check them`);
    expect(run.stderr).not.toContain('Error:');
    expect(code).toBe(8);
  }, 120_000);
});
