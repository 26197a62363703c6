/**
 * The bench's fleet (docs/fleet.md), started on first use and stopped at the end of the
 * run: a NATS cluster of its own (test/support/nats-cluster.ts), one agent (`callwire
 * agent` of this build) beside the bench's engine, and a gateway (bench/fleet-gateway.ts),
 * each with the server's Node flags. The cluster also has a NATS user for each idle host
 * bench/idle-hosts.ts plays.
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { Client } from '../src/client/index.js';
import { NatsCluster } from '../test/support/nats-cluster.js';
import type { Build } from './built.js';
import { idleHostIds, MAX_IDLE_HOSTS } from './idle-hosts.js';
import { FLEET } from './names.js';
import { startBenchProcess, stopChild } from './server-process.js';
import { callwireSubject } from './subjects/callwire.js';
import type { Subject } from './subject.js';

/** The agent's host id. */
export const FLEET_HOST = 'bench';
/** Far longer than a process of the fleet takes to start on a loaded machine. */
const STARTUP_MS = 30_000;

export interface GatewayProcess {
  readonly pid: number;
  /** Where it serves callwire over WebSocket (for a CLI process of the bench's). */
  readonly wsUrl: string;
  /** This process's SDK client of it. */
  readonly client: Client;
  stop(): Promise<void>;
}

export interface RunningFleet {
  readonly cluster: NatsCluster;
  readonly agentPid: number;
  readonly gateway: GatewayProcess;
  /** Exec through the gateway, beside the direct WebSocket's. */
  readonly subject: Subject;
  /** Another gateway on the same cluster, for a scenario of its own (memory). */
  startGateway(): Promise<GatewayProcess>;
  close(): Promise<void>;
}

/** Stops a child of the bench: SIGTERM, and resolves once it has exited. */
type Stop = () => Promise<void>;

/** `callwire agent --host-id host` of `build`, as the host's NATS user, in front of `dockerHost` (the bench's engine by default); resolves once it serves. */
export async function startAgent(build: Build, cluster: NatsCluster, host: string, dockerHost = process.env['DOCKER_HOST']): Promise<{ pid: number; stop: Stop }> {
  const user = cluster.users[host]!;
  const argv = [...build.nodeFlags.longLivedNodeFlags, build.cli, 'agent', '--nats', cluster.urls.join(','), '--host-id', host, '--nats-user', user.user];
  const child = spawn(process.execPath, argv, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, DOCKER_HOST: dockerHost, CALLWIRE_NATS_PASS: user.pass } });
  // Its log is kept for a failure message: a killed NATS node makes it warn, as it should.
  let log = '';
  child.stderr.on('data', (d: Buffer) => (log = (log + d.toString()).slice(-4000)));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`callwire agent did not serve within ${STARTUP_MS} ms: ${log}`)), STARTUP_MS);
    child.once('exit', (code) => reject(new Error(`callwire agent exited ${code} before it served: ${log}`)));
    createInterface({ input: child.stdout }).on('line', (line) => {
      if (!/callwire agent is serving/.test(line)) return;
      clearTimeout(timer);
      resolve();
    });
  });
  child.removeAllListeners('exit');
  return { pid: child.pid!, stop: () => stopChild(child) };
}

/** Waits until `client`'s gateway has `count` hosts up (`host` among them, when given). */
export async function untilHostsUp(client: Client, count: number, host?: string): Promise<void> {
  const deadline = performance.now() + STARTUP_MS;
  for (;;) {
    const info = await client.call<{ fleet?: { hosts: { id: string; state: string }[] } }>('services/info', null);
    const up = (info.fleet?.hosts ?? []).filter((h) => h.state === 'up');
    if (up.length >= count && (host === undefined || up.some((h) => h.id === host))) return;
    if (performance.now() > deadline) throw new Error(`the gateway did not see ${count} hosts up within ${STARTUP_MS} ms: ${JSON.stringify(info.fleet)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The gateway of `cluster`; resolves once it has every one of `hosts` up. */
export async function startGateway(build: Build, cluster: NatsCluster, hosts: readonly string[] = [FLEET_HOST]): Promise<GatewayProcess> {
  const { user, pass } = cluster.users['gateway']!;
  const gateway = await startBenchProcess<{ wsUrl: string }>(build, 'bench/fleet-gateway.ts', { CALLWIRE_BENCH_NATS: JSON.stringify({ servers: cluster.urls, user, pass }) });
  const client = await build.client.connect(gateway.info.wsUrl);
  for (const host of hosts) await untilHostsUp(client, hosts.length, host);
  return {
    pid: gateway.pid,
    wsUrl: gateway.info.wsUrl,
    client,
    stop: async () => {
      await client.close();
      await gateway.stop();
    },
  };
}

async function startFleet(build: Build, directName: string): Promise<RunningFleet> {
  const cluster = await NatsCluster.start({ hosts: [FLEET_HOST, ...idleHostIds(MAX_IDLE_HOSTS)] });
  const stops: Stop[] = [() => cluster.stop()];
  const close = async (): Promise<void> => {
    for (const stop of stops.reverse()) await stop();
  };
  try {
    const agent = await startAgent(build, cluster, FLEET_HOST);
    stops.push(agent.stop);
    const gateway = await startGateway(build, cluster);
    stops.push(gateway.stop);
    const subject = callwireSubject(FLEET, build, gateway.client, { peers: [directName], processes: { gateway: gateway.pid, agent: agent.pid, client: process.pid } });
    return { cluster, agentPid: agent.pid, gateway, subject, startGateway: () => startGateway(build, cluster), close };
  } catch (error) {
    await close();
    throw error;
  }
}

/** The fleet, made on first use (most runs never need it), closed at the end. */
export class BenchFleet {
  private started: Promise<RunningFleet> | undefined;

  /** `directName`: the subject the fleet's rows are divided by. */
  constructor(
    private readonly build: Build,
    private readonly directName: string,
  ) {}

  get(): Promise<RunningFleet> {
    this.started ??= startFleet(this.build, this.directName);
    return this.started;
  }

  async close(): Promise<void> {
    const fleet = await this.started?.catch(() => undefined);
    await fleet?.close();
    this.started = undefined;
  }
}
