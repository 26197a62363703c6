import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import { parseResultRecord } from '../support/result-record-schema.js';
import { ServerFixture } from '../support/server-fixture.js';
import { until } from '../support/wait.js';

/**
 * A signal is honoured at every point of a run, connecting included, and a refused
 * token is `forbidden` (docs/cli.md "Exit codes").
 */
describe('CLI: signals while connecting, refused tokens', () => {
  // Accepts TCP and never answers the upgrade: every run against it is "still connecting".
  let blackHole: Server;
  const pending: Socket[] = [];
  let url = '';
  const locked = new ServerFixture();
  beforeAll(async () => {
    blackHole = createServer((socket) => pending.push(socket));
    await new Promise<void>((resolve) => blackHole.listen(0, '127.0.0.1', resolve));
    url = `ws://127.0.0.1:${(blackHole.address() as AddressInfo).port}/callwire`;
    await locked.start({ webTransportPort: false, tokens: [{ token: 'the-right-token-0123456789', subject: 'ci', scopes: ['*'] }] });
  });
  afterAll(async () => {
    for (const s of pending) s.destroy();
    await new Promise((resolve) => blackHole.close(resolve));
    await locked.stop();
  });

  const cases = [
    { command: ['call', 'services/list', '--input', 'null'], signal: 'SIGINT' as const, code: 3, stderr: /Error: cancelled by a signal while connecting/ },
    { command: ['exec', 'web', '--', 'true'], signal: 'SIGTERM' as const, code: 130, stderr: /Error: cancelled by a signal while connecting/ },
    { command: ['subscribe', 'services/list'], signal: 'SIGINT' as const, code: 0, stderr: /\[callwire\] exited — received 0 event\(s\) in [\d.]+s \(reason: signal\)/ },
  ];
  for (const c of cases) {
    it(`${c.command[0]}: ${c.signal} while connecting ends the run at once with exit ${c.code}`, async () => {
      const before = pending.length;
      const run = runCli(['--url', url, ...c.command], { stdin: 'pipe' });
      await until(() => pending.length > before, 'the CLI connecting', 10_000);
      const sent = Date.now();
      run.child.kill(c.signal);
      const { code } = await run.exited;
      expect(code).toBe(c.code);
      expect(run.stderr).toMatch(c.stderr);
      // Not after the 10 s connect timeout: at once.
      expect(Date.now() - sent).toBeLessThan(3000);
    });
  }

  it('a wrong token refused at the upgrade (HTTP 401) is forbidden: exit 7 for call, 122 for exec, not retryable', async () => {
    const args = ['--url', locked.server.wsUrl, '--token', 'a-wrong-token-9876543210'];
    const call = runCli([...args, '--json', 'call', 'services/list', '--input', 'null'], { stdin: 'ignore' });
    expect((await call.exited).code).toBe(7);
    expect(parseResultRecord(call.stdout)).toMatchObject({ outcome: 'forbidden', exit_code: 7, error: { code: 'FORBIDDEN', retryable: false } });
    expect(call.stdout).not.toContain('a-wrong-token');
    const exec = runCli([...args, 'exec', 'web', '--', 'true'], { stdin: 'ignore' });
    expect((await exec.exited).code).toBe(122);
    expect(exec.stderr).toMatch(/HTTP 401.*\(FORBIDDEN\)/);
  });
});
