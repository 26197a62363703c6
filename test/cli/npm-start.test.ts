import { spawn } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { longLivedNodeFlags } from '../../src/cli/node-flags.js';
import { runCli } from '../support/cli.js';
import { DockerFixture, dockerHost } from '../support/docker.js';
import { childPids, commandLine } from '../support/proc.js';

const DEMO = 'callwire-demo';

/**
 * `npm start`'s program (scripts/start.mjs) against the test engine: it makes the
 * demo container the README's first example uses, serves, and on Ctrl-C stops the
 * server and removes nothing. (Starting a private engine when none answers is the
 * path of a fresh machine; CI's engine is already up, so that path is checked by
 * hand and described in the closing note.)
 */
describe('npm start', () => {
  const docker = new DockerFixture();
  let existed = false;
  afterAll(async () => {
    // Leave the engine as we found it: the demo container goes only if this test made it.
    if (!existed) await docker.engine.docker.getContainer(DEMO).remove({ force: true }).catch(() => undefined);
  });

  it('creates (or reuses) the demo container, serves, runs the README example, and stops on Ctrl-C leaving the container', async () => {
    existed = (await docker.engine.docker.getContainer(DEMO).inspect().catch(() => undefined)) !== undefined;
    const start = spawn(process.execPath, ['scripts/start.mjs', '--port', '0', '--wt-port', '0'], { env: { ...process.env, DOCKER_HOST: dockerHost }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    start.stdout.on('data', (d: Buffer) => (out += d.toString()));
    start.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((resolve) => start.on('exit', resolve));
    await expect.poll(() => /ws:\/\/127\.0\.0\.1:\d+\/callwire/.exec(out)?.[0], { timeout: 60_000 }).toBeDefined();
    expect(out).toMatch(new RegExp(`\\[npm start\\] docker: DOCKER_HOST=.*; demo container ${DEMO} \\((created from callwire-test:busybox|reused)\\)`));
    const url = /ws:\/\/127\.0\.0\.1:\d+\/callwire/.exec(out)![0];
    // The serving process runs with the server's Node flags (src/cli/node-flags.ts), so its banner misses none.
    expect(out).not.toMatch(/^ {2}node {10}without/m);
    expect(childPids(start.pid!).map(commandLine).find((argv) => argv.includes('serve'))).toEqual(expect.arrayContaining([...longLivedNodeFlags]));
    const run = runCli(['--url', url, 'exec', DEMO, '--', 'uname', '-a'], { stdin: 'ignore' });
    expect((await run.exited).code).toBe(0);
    expect(run.stdout).toMatch(/^Linux /);
    start.kill('SIGINT');
    expect(await exited).toBe(0);
    const demo = await docker.engine.docker.getContainer(DEMO).inspect();
    expect(demo.State.Running).toBe(true);
    expect(demo.Config.Labels['callwire.demo']).toBe('true');
  }, 90_000);
});
