import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, type CliRun } from '../support/cli.js';
import { DockerFixture, dockerHost } from '../support/docker.js';

/**
 * A server that is going away says so to its clients (spec §4.9, docs/cli.md "A dropped
 * connection"): a long exec run by the real CLI against a spawned `callwire serve` ends at
 * once, exit 123, saying the server is shutting down, though it asked the server to keep
 * its call for 120 s, longer than each test may run. A server killed outright (SIGKILL)
 * says nothing, and the CLI tries to resume as it always did.
 */
describe('callwire exec against a server that stops', () => {
  const docker = new DockerFixture();
  let container = '';
  const runs: CliRun[] = [];
  beforeAll(async () => {
    container = await docker.container();
  });
  afterAll(async () => {
    for (const run of runs) if (run.child.exitCode === null && run.child.signalCode === null) run.child.kill('SIGKILL');
    await docker.cleanup();
  });

  /** A server on a free port whose live calls have `grace` seconds on the first signal, and a counting exec on it that asked for a 120 s resume grace. */
  const serveAndExec = async (grace: number, resume = 120): Promise<{ server: CliRun; exec: CliRun }> => {
    const server = runCli(['serve', '--port', '0', '--no-webtransport', '--grace', String(grace)], { stdin: 'ignore', env: { DOCKER_HOST: dockerHost } });
    runs.push(server);
    const url = (await server.waitFor(/ws:\/\/127\.0\.0\.1:\d+\/callwire/, 'stdout', 20_000)).trim();
    const exec = runCli(['--url', url, 'exec', '--resume', String(resume), container, '--', 'sh', '-c', 'i=0; while :; do echo $i; i=$((i+1)); sleep 1; done'], { stdin: 'ignore' });
    runs.push(exec);
    await exec.waitFor(/^1$/m, 'stdout', 20_000);
    return { server, exec };
  };

  it('SIGTERM: the live exec gets the server\'s grace, then exits 123 at once saying the server is shutting down; no reconnecting', async () => {
    const { server, exec } = await serveAndExec(1);
    server.child.kill('SIGTERM');
    expect(await exec.exited).toEqual({ code: 123, signal: null });
    expect(exec.stderr).toMatch(/^Error: the server is shutting down \(UNAVAILABLE\)$/m);
    expect(exec.stderr).not.toContain('reconnecting');
    expect((await server.exited).code).toBe(0);
  }, 60_000);

  it('a second SIGINT past the first press ("exiting now"): the exec exits 123 at once, not after its 120 s resume grace', async () => {
    const { server, exec } = await serveAndExec(120);
    server.child.kill('SIGINT');
    await server.waitFor(/SIGINT: no new calls; live calls have 120s to finish/, 'stderr');
    // Past the window in which a second copy counts as the same press (src/cli/signals.ts).
    await new Promise((resolve) => setTimeout(resolve, 2000));
    server.child.kill('SIGINT');
    expect(await exec.exited).toEqual({ code: 123, signal: null });
    expect(exec.stderr).toMatch(/the server .*is shutting down/);
    expect(exec.stderr).not.toContain('reconnecting');
    expect((await server.exited).code).toBe(130);
    expect(server.stderr).toContain('SIGINT again: exiting now');
  }, 60_000);

  it('SIGKILL (no close, nothing said): the exec tries to resume as before, and exits 123 when its grace has passed', async () => {
    const { server, exec } = await serveAndExec(10, 2);
    server.child.kill('SIGKILL');
    expect(await exec.exited).toEqual({ code: 123, signal: null });
    expect(exec.stderr).toContain('callwire: connection lost; reconnecting (the call is kept for 2 s)');
    expect(exec.stderr).toMatch(/could not be resumed within its 2 s grace \(UNAVAILABLE\)/);
    expect(exec.stderr).not.toContain('shutting down');
  }, 60_000);
});
