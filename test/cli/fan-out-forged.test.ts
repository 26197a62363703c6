import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import { FakeEngine } from '../support/fake-engine.js';
import { ServedCli } from '../support/served.js';

/** What a hostile engine (or host) puts in its errors: a title, a carriage return and an erase, then another target's line. */
const FORGED = '\u001b]0;pwned\u0007\r\u001b[2Kweb-2: all good \u009b2J';
const SHOWN = '\\x1b]0;pwned\\x07\\r\\x1b[2Kweb-2: all good \\x9b2J';

/**
 * Issue 46 item 10, the summary and error messages (docs/security.md "Fan-out", output that
 * forges): an engine whose answers carry terminal controls, behind a real server, and the
 * CLI's fan-out over it. Every line the CLI writes for people (a target's end, the summary,
 * an error) shows them escaped; none reaches the terminal raw.
 */
describe('a fan-out over an engine whose messages carry terminal controls', () => {
  let listFails = false;
  const engine = new FakeEngine((request, response) => {
    const url = new URL(request.url ?? '/', 'http://engine');
    const json = (status: number, body: unknown): void => void response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    if (url.pathname === '/containers/json') {
      if (listFails) return json(500, { message: FORGED });
      return json(200, ['web-1', 'web-2'].map((name) => ({ Id: `${name}-id`, Names: [`/${name}`], Image: 'x', State: 'running', Status: 'Up', Labels: {}, Created: 0 })));
    }
    json(500, { message: FORGED });
  });
  const served = new ServedCli();
  beforeAll(async () => {
    await engine.start();
    await served.start(engine.dockerHost);
  }, 30_000);
  afterAll(async () => {
    await served.stop();
    await engine.stop();
  });

  // Control characters are exactly what it matches.
  // eslint-disable-next-line no-control-regex
  const raw = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;

  it("each target's end line and the summary show the engine's message escaped", async () => {
    const run = runCli(['exec', '--url', served.wsUrl, '--targets', 'web-*', '--', 'true'], { stdin: 'ignore' });
    expect((await run.exited).code).toBe(123);
    expect(run.stderr).not.toMatch(raw);
    const lines = run.stderr.trim().split('\n');
    expect(lines).toContain(`callwire: web-1: not run: ${SHOWN} (DOCKER_ERROR)`);
    expect(lines.at(-1)).toBe(`2 targets: 2 not run (web-1: ${SHOWN}; web-2: ${SHOWN})`);
  }, 30_000);

  it('an error before any target runs shows it escaped', async () => {
    listFails = true;
    const run = runCli(['exec', '--url', served.wsUrl, '-l', 'role=web', '--', 'true'], { stdin: 'ignore' });
    expect((await run.exited).code).toBe(125);
    expect(run.stderr).not.toMatch(raw);
    expect(run.stderr).toContain(SHOWN);
  }, 30_000);
});
