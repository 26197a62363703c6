import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadScenarios } from '../../src/conformance/index.js';
import { cliPath } from '../support/cli.js';
import { denoForTests } from '../support/deno-presence.js';
import { http3Missing } from '../support/server-fixture.js';
import { skipTitle } from '../support/skip.js';
import { CLI_RUNS, dir, otherTransportSkips, passesEveryScenario, useConformanceServe, type ConformanceServe } from './cli-runs.js';
import { DENO_DEFECTS, unexplained } from './deno-defects.js';
import { RUNNER_TOKEN, SCOPELESS_TOKEN } from './tokens.js';

type Results = { id: string; status: string; message: string }[];

/** Deno's own run of the CLI over HTTP/3 against `served`: its report's results. */
async function denoRun(served: ConformanceServe): Promise<Results> {
  const deno = await denoForTests();
  if ('reason' in deno) throw new Error(`no HTTP/3 client: ${deno.reason} (npm ci installs it)`);
  const report = join(dir, `callwire-conformance-${process.pid}-h3.json`);
  const run = spawn(deno.path, ['run', '-A', '--unstable-net', '--quiet', cliPath, '--token', RUNNER_TOKEN, '--cert-hash', served.certHash, 'conformance', served.wtUrl, '--scopeless-token', SCOPELESS_TOKEN, '--report', report], {
    stdio: 'ignore',
    env: { ...process.env, NO_COLOR: '1' },
  });
  await new Promise((resolve) => run.on('exit', resolve));
  return (JSON.parse(readFileSync(report, 'utf8')) as { results: Results }).results;
}

describe(CLI_RUNS, () => {
  const served = useConformanceServe();
  // Deno's run goes beside Node's, against a serve of its own (so neither shares a limit or a
  // counter with the other): each is ~40 s of waiting on its scenarios' clocks, little CPU.
  const servedToDeno = useConformanceServe();
  let byDeno: Promise<{ results: Results } | { error: unknown }> | undefined;
  beforeAll(() => {
    if (http3Missing === undefined) byDeno = denoRun(servedToDeno).then((results) => ({ results }), (error: unknown) => ({ error }));
  });
  passesEveryScenario(served, 'WebTransport over HTTP/3 (msgpack)');

  describe.skipIf(http3Missing !== undefined)(skipTitle('over HTTP/3 through the Deno edge, run by Deno with its own WebTransport client', http3Missing), () => {
    let results: Results = [];
    beforeAll(async () => {
      const ran = await byDeno!;
      if ('error' in ran) throw ran.error;
      results = ran.results;
    }, 240_000);

    it('every scenario passes but the other transport\'s, each saying so, and those a pinned Deno defect names by id, outcome and message', () => {
      expect(results).toHaveLength(loadScenarios().length);
      const other = otherTransportSkips(servedToDeno.wtUrl);
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
});
