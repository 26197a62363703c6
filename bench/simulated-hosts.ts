/**
 * Many fleet hosts in one process (bench/fleet-scale.ts): for each, a simulated engine
 * on a unix socket (test/support/simulated-engine.ts) holding `containers` running
 * containers, and a real agent of this build (`startAgent` of dist/fleet) as that host's
 * NATS user. The agents share the process's one thread: what they cost is the bench
 * process's, not the gateway's, whose memory and time are the rows.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type * as Dispatcher from '../src/dispatcher/index.js';
import type * as FleetModule from '../src/fleet/index.js';
import type * as Operations from '../src/operations/index.js';
import { SimulatedEngine } from '../test/support/simulated-engine.js';
import type { NatsCluster } from '../test/support/nats-cluster.js';

export const scaleHostIds = (count: number): string[] => Array.from({ length: count }, (_, i) => `sim-${i + 1}`);
/** The one container of each host that a fan-out's exec targets, by a bare name the fleet resolves. */
export const targetOf = (host: string): string => `target-${host}`;

export interface SimulatedHosts {
  readonly engines: ReadonlyMap<string, SimulatedEngine>;
  stop(): Promise<void>;
}

/** `hosts` agents, started `batch` at a time (each dials NATS and lists its engine once). */
export async function startSimulatedHosts(dist: string, cluster: NatsCluster, hosts: readonly string[], containers: number, batch = 50): Promise<SimulatedHosts> {
  const load = async <T>(path: string): Promise<T> => (await import(pathToFileURL(resolve(dist, path)).href)) as T;
  const { startAgent } = await load<typeof FleetModule>('fleet/index.js');
  const { dockerEngine } = await load<typeof Operations>('operations/index.js');
  const { silentLogger } = await load<typeof Dispatcher>('dispatcher/index.js');
  const dir = mkdtempSync(join(tmpdir(), 'callwire-scale-'));
  const engines = new Map<string, SimulatedEngine>();
  const agents: FleetModule.RunningAgent[] = [];
  const stop = async (): Promise<void> => {
    await Promise.all(agents.map((a) => a.close().catch(() => undefined)));
    await Promise.all([...engines.values()].map((e) => e.close()));
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (let i = 0; i < hosts.length; i += batch) {
      await Promise.all(
        hosts.slice(i, i + batch).map(async (host) => {
          const engine = await SimulatedEngine.start(join(dir, `${host}.sock`));
          engines.set(host, engine);
          engine.add(targetOf(host), { role: 'target' });
          engine.addMany(containers - 1, (n) => ({ role: n % 2 === 0 ? 'web' : 'db', 'com.example.tier': 'bench' }), (n) => `${host}-c${n}`);
          const { user, pass } = cluster.users[host]!;
          agents.push(await startAgent({ nats: { servers: cluster.urls, user, pass }, hostId: host, engine: dockerEngine(engine.address), logger: silentLogger }));
        }),
      );
    }
  } catch (error) {
    await stop();
    throw error;
  }
  return { engines, stop };
}
