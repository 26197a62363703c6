import { connect, type Client } from '../../src/client-node/index.js';
import { runCli, type CliRun } from './cli.js';
import { dockerHost } from './docker.js';
import { NatsCluster, type NatsClusterOptions } from './nats-cluster.js';

export interface AgentRunOptions {
  readonly urls?: string[];
  readonly prefix?: string[];
  readonly env?: NodeJS.ProcessEnv;
  readonly extraArgs?: string[];
}

export interface GatewayRun {
  readonly run: CliRun;
  readonly wsUrl: string;
}

/**
 * A fleet of real processes for a test (docs/fleet.md): a NATS cluster of its own,
 * agents (`callwire agent`) beside the test engine, and gateways (`callwire serve
 * --nats`), each with its own NATS user. Call `stop()` in afterAll.
 */
export class Fleet {
  readonly agents = new Map<string, CliRun>();
  readonly gateways: GatewayRun[] = [];
  private readonly clients: Client[] = [];
  private readonly spawned: CliRun[] = [];

  private constructor(readonly cluster: NatsCluster) {}

  static async start(options: NatsClusterOptions = {}): Promise<Fleet> {
    return new Fleet(await NatsCluster.start(options));
  }

  /** `callwire agent --host-id host`, as its own NATS user; resolves once it serves. */
  async agent(host: string, options: AgentRunOptions = {}): Promise<CliRun> {
    const run = this.spawnAgent(host, options);
    await run.waitFor(/callwire agent is serving/, 'stdout', 20_000);
    this.agents.set(host, run);
    return run;
  }

  /** `callwire agent --host-id host` started, not waited for (it may refuse to serve): stopped with the fleet. */
  spawnAgent(host: string, options: AgentRunOptions = {}): CliRun {
    const user = this.cluster.users[host];
    if (!user) throw new Error(`the cluster has no NATS user for host ${host}`);
    const run = runCli(['agent', '--nats', (options.urls ?? this.cluster.urls).join(','), '--host-id', host, '--nats-user', user.user, ...this.caFlag(), ...(options.extraArgs ?? [])], {
      stdin: 'ignore',
      env: { DOCKER_HOST: dockerHost, CALLWIRE_NATS_PASS: user.pass, ...options.env },
      prefix: options.prefix,
    });
    this.spawned.push(run);
    return run;
  }

  /** `callwire serve --nats`, as the gateway user; resolves once it serves, with hosts `waitHosts` up. */
  async gateway(options: { extraArgs?: string[]; urls?: string[]; env?: NodeJS.ProcessEnv; waitHosts?: string[] } = {}): Promise<GatewayRun> {
    const user = this.cluster.users['gateway'];
    if (!user) throw new Error('the cluster has no gateway user');
    const run = runCli(['serve', '--port', '0', '--no-webtransport', '--nats', (options.urls ?? this.cluster.urls).join(','), '--nats-user', user.user, ...this.caFlag(), ...(options.extraArgs ?? [])], {
      stdin: 'ignore',
      env: { CALLWIRE_NATS_PASS: user.pass, ...options.env },
    });
    const wsUrl = (await run.waitFor(/ws:\/\/127\.0\.0\.1:\d+\/callwire/, 'stdout', 20_000)).trim();
    const gateway = { run, wsUrl };
    this.gateways.push(gateway);
    for (const host of options.waitHosts ?? []) await this.hostState(gateway, host, 'up');
    return gateway;
  }

  async client(gateway: GatewayRun, token?: string): Promise<Client> {
    const client = await connect(gateway.wsUrl, token === undefined ? {} : { token });
    this.clients.push(client);
    return client;
  }

  /** Waits until `gateway`'s services/info shows `host` in `state`; the milliseconds it took. */
  async hostState(gateway: GatewayRun, host: string, state: 'up' | 'down' | 'absent', timeoutMs = 15_000): Promise<number> {
    const client = await this.client(gateway);
    const start = Date.now();
    for (;;) {
      const info = await client.call<{ fleet?: { hosts: { id: string; state: string }[] } }>('services/info', null);
      const row = info.fleet?.hosts.find((h) => h.id === host);
      if ((state === 'absent' && !row) || row?.state === state) return Date.now() - start;
      if (Date.now() - start > timeoutMs) throw new Error(`host ${host} not ${state} within ${timeoutMs} ms: ${JSON.stringify(info.fleet)}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  async stop(): Promise<void> {
    await Promise.all(this.clients.map((c) => c.close().catch(() => undefined)));
    const runs = [...new Set([...this.spawned, ...this.agents.values()]), ...this.gateways.map((g) => g.run)];
    for (const run of runs) if (run.child.exitCode === null && run.child.signalCode === null) run.child.kill('SIGKILL');
    await Promise.all(runs.map((r) => r.exited));
    await this.cluster.stop();
  }

  private caFlag(): string[] {
    return this.cluster.ca ? ['--nats-ca', this.cluster.ca] : [];
  }
}
