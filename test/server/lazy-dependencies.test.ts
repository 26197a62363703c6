import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const LIBRARY = fileURLToPath(new URL('../../src/server/index.ts', import.meta.url));
const PROBE = fileURLToPath(new URL('../support/loaded-packages.mjs', import.meta.url));

/** The npm packages a fresh process has loaded after importing the library and taking `step`. */
async function loadedPackages(step?: 'start' | 'dockerEngine'): Promise<string[]> {
  const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', PROBE, LIBRARY, ...(step ? [step] : [])], { timeout: 60_000 });
  return (JSON.parse(stdout.split('\n').at(-1)!) as { packages: string[] }).packages;
}

/** What only some servers need, by the option that needs it: NATS (`fleet`), prom-client (metrics), dockerode (`docker`), the x509 code (a self-signed certificate). */
const HEAVY = ['nats', '@nats-io/transport-node', '@nats-io/nats-core', 'prom-client', 'dockerode', 'docker-modem', '@peculiar/x509', 'reflect-metadata', 'tsyringe'];

describe('the library loads a heavy dependency only when an option needs it', () => {
  it('importing callwire (src/server/index.ts) loads none of NATS, prom-client, dockerode and the x509 code', async () => {
    const loaded = await loadedPackages();
    expect(loaded).toContain('zod'); // the probe sees what the library loads
    expect(loaded.filter((name) => HEAVY.includes(name))).toEqual([]);
  });

  it('starting a server with metrics on (the default) loads prom-client, and still none of the others', async () => {
    const loaded = await loadedPackages('start');
    expect(loaded).toContain('prom-client');
    expect(loaded.filter((name) => HEAVY.includes(name) && name !== 'prom-client')).toEqual([]);
  });

  it('dockerEngine() loads dockerode, and nothing of NATS or x509', async () => {
    const loaded = await loadedPackages('dockerEngine');
    expect(loaded).toContain('dockerode');
    expect(loaded.filter((name) => ['@nats-io/transport-node', '@peculiar/x509', 'prom-client'].includes(name))).toEqual([]);
  });
});
