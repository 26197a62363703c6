import { expect } from 'vitest';
import { runCli } from './cli.js';
import { dockerCli, dockerHost, TEST_IMAGE } from './docker.js';

/**
 * What the cp tests copy from: a container named `name` whose files `script` makes (run
 * by `sh -c` in it), and a real `callwire serve` in front of the engine. `stop` removes both.
 */
export async function cpSource(name: string, script: string): Promise<{ url: string; stop(): Promise<void> }> {
  await dockerCli(['rm', '-f', name]);
  const started = await dockerCli(['run', '-d', '--name', name, '--network', 'none', TEST_IMAGE, 'sleep', '1000000']);
  expect(started.code, started.stderr.toString()).toBe(0);
  const made = await dockerCli(['exec', name, 'sh', '-c', script]);
  expect(made.code, made.stderr.toString()).toBe(0);
  const server = runCli(['serve', '--port', '0', '--no-webtransport'], { stdin: 'ignore', env: { DOCKER_HOST: dockerHost } });
  const url = (await server.waitFor(/ws:\/\/127\.0\.0\.1:\d+\/callwire/, 'stdout', 20_000)).trim();
  return {
    url,
    async stop() {
      server.child.kill('SIGKILL');
      await dockerCli(['rm', '-f', name]);
    },
  };
}
