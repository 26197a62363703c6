import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { connect } from '@nats-io/transport-node';
import { NATS_CLUSTER_SCRIPT, parseEnv } from '../support/nats-cluster.js';
import { freePorts } from '../support/ports.js';
import { isRunning } from '../support/proc.js';

const run = promisify(execFile);

/** A three-node cluster's variables on loopback: its state in `root`, client, route and monitoring ports from `ports` (nine), `hosts` its host users, no TLS. */
function clusterOn(root: string, ports: readonly number[], hosts: string): NodeJS.ProcessEnv {
  return {
    CALLWIRE_NATS_ROOT: root,
    CALLWIRE_NATS_CLIENT_PORTS: ports.slice(0, 3).join(' '),
    CALLWIRE_NATS_CLUSTER_PORTS: ports.slice(3, 6).join(' '),
    CALLWIRE_NATS_HTTP_PORTS: ports.slice(6).join(' '),
    CALLWIRE_NATS_ADDRS: '127.0.0.1 127.0.0.1 127.0.0.1',
    CALLWIRE_NATS_HOSTS: hosts,
    CALLWIRE_NATS_TLS: '0',
  };
}

/**
 * `scripts/nats-cluster.sh up|env|down` as a developer and CI run it (issue 24, "Runs from the
 * README"): the nodes detach from the caller, `up` is idempotent, `down` leaves nothing behind.
 */
describe('scripts/nats-cluster.sh', () => {
  const parent = mkdtempSync(join(tmpdir(), 'callwire-nats-script-'));
  const root = join(parent, 'cluster');
  let env: NodeJS.ProcessEnv = {};
  const script = async (command: string, extra: NodeJS.ProcessEnv = {}) => (await run('bash', [NATS_CLUSTER_SCRIPT, command], { env: { ...process.env, ...env, ...extra } })).stdout;
  const pids = () => [1, 2, 3].map((node) => Number(readFileSync(join(root, `node${node}`, 'nats.pid'), 'utf8')));

  afterAll(async () => {
    await script('down').catch(() => undefined);
    rmSync(parent, { recursive: true, force: true });
  });

  it('up starts three routed nodes, prints their URLs and a password per user; a second up keeps them; a new host is added in place; down removes everything', async () => {
    const ports = await freePorts('127.0.0.1', 9);
    env = { ...process.env, ...clusterOn(root, ports, 'a web-1') };
    const first = parseEnv(await script('up'));
    expect(first.get('CALLWIRE_NATS_URLS')).toBe(ports.slice(0, 3).map((port) => `nats://127.0.0.1:${port}`).join(','));
    expect(first.get('CALLWIRE_NATS_HOSTS')).toBe('a web-1');
    expect([first.get('CALLWIRE_NATS_GATEWAY_USER'), first.get('CALLWIRE_NATS_HOST_A_USER'), first.get('CALLWIRE_NATS_HOST_WEB_1_USER')]).toEqual(['gateway', 'a', 'web-1']);
    const passwords = ['GATEWAY', 'HOST_A', 'HOST_WEB_1'].map((user) => first.get(`CALLWIRE_NATS_${user}_PASS`));
    expect(new Set(passwords).size).toBe(3);
    for (const pass of passwords) expect(pass).toMatch(/^[0-9a-f]{48}$/);
    expect([...first.keys()].some((name) => name.includes('ROUTE'))).toBe(false);
    expect(statSync(join(root, 'credentials')).mode & 0o777).toBe(0o600);
    for (const port of ports.slice(6)) {
      expect(((await (await fetch(`http://127.0.0.1:${port}/routez`)).json()) as { num_routes: number }).num_routes).toBe(2);
    }
    const running = pids();
    expect(running.every(isRunning)).toBe(true);

    expect(parseEnv(await script('up'))).toEqual(first);
    expect(pids()).toEqual(running);

    const grown = parseEnv(await script('up', { CALLWIRE_NATS_HOSTS: 'a web-1 c' }));
    expect(pids()).toEqual(running);
    expect(grown.get('CALLWIRE_NATS_GATEWAY_PASS')).toBe(first.get('CALLWIRE_NATS_GATEWAY_PASS'));
    const c = await connect({ servers: grown.get('CALLWIRE_NATS_URLS')!.split(','), user: 'c', pass: grown.get('CALLWIRE_NATS_HOST_C_PASS')! });
    await c.close();
    expect(parseEnv(await script('env'))).toEqual(grown);

    await script('down');
    expect(running.some(isRunning)).toBe(false);
    expect(existsSync(root)).toBe(false);
    await expect(script('env')).rejects.toThrow(/no cluster configured/);
  });

  it('wait waits through nodes whose monitoring port does not answer yet (a loaded machine starts them slowly), then ends 0 once they form', async () => {
    const slow = clusterOn(join(parent, 'slow'), await freePorts('127.0.0.1', 9), 'a');
    try {
      await script('configure', slow);
      // Nothing listens yet: every ask of a monitoring port is refused until up starts the nodes.
      const waited = script('wait', slow).then(() => 'formed', (error: Error) => `failed: ${error.message}`);
      await new Promise((resolve) => setTimeout(resolve, 1500));
      await script('up', slow);
      expect(await waited).toBe('formed');
    } finally {
      await script('down', slow).catch(() => undefined);
    }
  });

  it('refuses host ids that are not one subject token, the gateway\'s name, or ids whose variables collide', async () => {
    for (const [hosts, why] of [
      ['a b.c', /not \^\[a-z0-9\]/],
      ['a *', /not \^\[a-z0-9\]/],
      ['gateway', /the gateway's user/],
      ['web-1 web_1', /collide as CALLWIRE_NATS_HOST_WEB_1_/],
    ] as const) {
      await expect(script('configure', { CALLWIRE_NATS_ROOT: join(parent, 'refused'), CALLWIRE_NATS_HOSTS: hosts })).rejects.toThrow(why);
    }
  });
});
