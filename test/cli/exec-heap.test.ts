import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliPath, exitingWithParent, runCli, type CliRun } from '../support/cli.js';
import { DockerFixture, dockerHost } from '../support/docker.js';

/** What V8 printed (`--trace-gc`) while the CLI streamed `mib` MiB of a command's stdout to a pipe, and the CLI's exit code. */
async function tracedExec(url: string, container: string, mib: number): Promise<{ code: number; scavenges: number; markCompacts: number }> {
  // The output is zeros: what is left once they are dropped is V8's trace, a line per collection.
  const script = `'${process.execPath}' --trace-gc '${cliPath}' --url ${url} exec ${container} -- dd if=/dev/zero bs=1M count=${mib} 2>/dev/null | tr -d '\\000' > "$TRACE"; echo "\${PIPESTATUS[0]}"`;
  const trace = `/dev/shm/callwire-gc-trace-${process.pid}`;
  const child = spawn('bash', ['-c', `${script}; cat "$TRACE"; rm -f "$TRACE"`], { env: exitingWithParent({ ...process.env, TRACE: trace }), stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString('latin1')));
  await new Promise((resolve) => child.on('exit', resolve));
  const [status, ...lines] = out.split('\n');
  return { code: Number(status), scavenges: lines.filter((l) => l.includes('Scavenge')).length, markCompacts: lines.filter((l) => l.includes('Mark-Compact')).length };
}

/**
 * The CLI's own heap while it streams: small, and collected young. V8 left to itself began
 * a marking cycle after nearly every young collection of such a process (27 mark-compacts
 * per 512 MiB, a quarter of its CPU); src/cli/node-flags.ts says why and what it sets.
 */
describe('callwire exec streaming 256 MiB: the CLI collects its garbage young', () => {
  const docker = new DockerFixture();
  let server: CliRun;
  let url = '';
  let c = '';

  beforeAll(async () => {
    server = runCli(['serve', '--port', '0', '--no-webtransport'], { env: { DOCKER_HOST: dockerHost } });
    url = (await server.waitFor(/ws:\/\/127\.0\.0\.1:\d+\/callwire/, 'stdout')).trim();
    c = await docker.container();
  }, 60_000);

  afterAll(async () => {
    server?.child.kill('SIGTERM');
    await server?.exited;
    await docker.cleanup();
  });

  it('exits 0 after young collections only, and at most two of the old generation', async () => {
    const run = await tracedExec(url, c, 256);
    expect(run.code).toBe(0);
    // The trace is there: a stream of this size passes through many young collections.
    expect(run.scavenges).toBeGreaterThan(5);
    expect(run.markCompacts).toBeLessThanOrEqual(2);
  }, 120_000);
});
