import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliPath } from '../support/cli.js';
import { DockerFixture, dockerCli } from '../support/docker.js';
import { within } from '../support/fleet-exec.js';
import { Fleet, type GatewayRun } from '../support/fleet.js';

/**
 * A GiB through the fleet: gateway on NATS node 1, agent a on node 2, so every byte also
 * crosses the cluster's route. Apart from fleet-failures.test.ts, whose bounds in wall-clock
 * time keep it serial: this has none, and runs beside other files.
 */
describe('a fleet carries a GiB', () => {
  const docker = new DockerFixture();
  let fleet: Fleet;
  let gateway1: GatewayRun;
  let name: string;

  beforeAll(async () => {
    fleet = await Fleet.start({ hosts: ['a'], nodes: 3 });
    await fleet.agent('a', { urls: [fleet.cluster.urls[1]!] });
    gateway1 = await fleet.gateway({ urls: [fleet.cluster.urls[0]!], waitHosts: ['a'] });
    const id = await docker.container();
    name = (await docker.engine.docker.getContainer(id).inspect()).Name.replace(/^\//, '');
  }, 90_000);

  afterAll(async () => {
    await fleet?.stop();
    await docker.cleanup();
  });

  it('1 GiB of random bytes through the fleet, byte-exact', async () => {
    const blob = '/tmp/fleet-blob';
    expect((await dockerCli(['exec', name, 'dd', 'if=/dev/urandom', `of=${blob}`, 'bs=1M', 'count=1024'])).code).toBe(0);
    try {
      const sum = await dockerCli(['exec', name, 'sha256sum', blob]);
      const expected = sum.stdout.toString('utf8').split(' ')[0];
      expect(expected).toMatch(/^[0-9a-f]{64}$/);
      // The CLI's stdout is hashed as it streams: a GiB is never held in memory.
      const child = spawn(process.execPath, [cliPath, 'exec', '--url', gateway1.wsUrl, `a/${name}`, '--', 'cat', blob], { stdio: ['ignore', 'pipe', 'pipe'] });
      const hash = createHash('sha256');
      let bytes = 0;
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => {
        hash.update(chunk);
        bytes += chunk.length;
      });
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
      const started = Date.now();
      const code = await within(new Promise<number | null>((resolve) => child.on('close', resolve)), 280_000, 'cat of 1 GiB through the fleet');
      const ms = Date.now() - started;
      expect(code, stderr).toBe(0);
      expect(bytes).toBe(1 << 30);
      expect(hash.digest('hex')).toBe(expected);
      console.log(`[fleet] 1 GiB through the fleet byte-exact in ${ms} ms: ${((1 << 30) / 1e6 / (ms / 1000)).toFixed(1)} MB/s (CLI start included)`);
    } finally {
      await dockerCli(['exec', name, 'rm', '-f', blob]);
    }
  }, 300_000);
});
