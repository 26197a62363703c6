import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePorts } from './ports.js';

export const NATS_CLUSTER_SCRIPT = join(import.meta.dirname, '../../scripts/nats-cluster.sh');
const run = promisify(execFile);

export interface NatsUser {
  user: string;
  pass: string;
}

export interface NatsClusterOptions {
  /** Agent host ids: each gets a NATS user with its own subjects (default ['a', 'b']). */
  hosts?: string[];
  /** Number of nodes (default 3). */
  nodes?: number;
  /** TLS on the client ports, with a CA of the cluster's own (`ca`). */
  tls?: boolean;
  /** The address each node listens on (default 127.0.0.1 for each), e.g. in its network namespace. */
  addresses?: string[];
  /** A command prefix a node is run under, e.g. `(n) => ['ip', 'netns', 'exec', `ns${n}`]`. */
  wrap?: (node: number) => string[];
}

/** The `export NAME=value` lines of `scripts/nats-cluster.sh env` (values shell-quoted by `printf %q`). */
export function parseEnv(text: string): Map<string, string> {
  const env = new Map<string, string>();
  for (const line of text.split('\n')) {
    const m = /^export ([A-Z0-9_]+)=(.*)$/.exec(line);
    if (m) env.set(m[1]!, m[2]!.replace(/\\(.)/g, '$1'));
  }
  return env;
}

const clusters = new Set<NatsCluster>();
// A test file that ends without stop() (a failed beforeAll, a crash) leaves no node running.
process.once('exit', () => {
  for (const cluster of clusters) cluster.killAllNow();
});

/**
 * A NATS cluster of its own for a test, in a temporary directory on ports of its worker's own
 * (./ports.ts, so files starting clusters side by side do not collide): the
 * configuration and credentials are the ones scripts/nats-cluster.sh writes (its `configure`),
 * the nodes are this process's children, so a test can kill one (`kill(node, 'SIGKILL')`)
 * and start it again (`start(node)`). Nodes are numbered from 1. Call `stop()` in afterAll.
 */
export class NatsCluster {
  /** The client URL of each node (node N at index N-1): `nats://` or, with TLS, `tls://`. */
  urls: string[] = [];
  /** Each node's monitoring endpoint, `http://ADDR:PORT` (`/routez`, `/subsz`, `/connz`...), node N at index N-1. */
  monitorUrls: string[] = [];
  /** Each node's route listener, `nats-route://ADDR:PORT` (it asks for the routes' own password). */
  routeUrls: string[] = [];
  /** Credentials by user: `gateway` and each host id. */
  users: Record<string, NatsUser> = {};
  /** The CA certificate's path (with TLS). */
  ca: string | undefined;
  readonly root: string;
  private env: NodeJS.ProcessEnv = {};
  private readonly children = new Map<number, ChildProcess>();

  private constructor(private readonly options: NatsClusterOptions) {
    this.root = mkdtempSync(join(tmpdir(), 'callwire-nats-'));
  }

  static async start(options: NatsClusterOptions = {}): Promise<NatsCluster> {
    const cluster = new NatsCluster(options);
    clusters.add(cluster);
    try {
      await cluster.configure();
      for (let node = 1; node <= cluster.urls.length; node++) cluster.spawnNode(node);
      await cluster.waitFormed();
      return cluster;
    } catch (e) {
      await cluster.stop();
      throw e;
    }
  }

  /** The node's configuration file (nats-server's syntax), e.g. for a test to read. */
  configFile(node: number): string {
    return join(this.root, `node${node}`, 'nats.conf');
  }

  /** Signals a node and waits until it has exited. */
  async kill(node: number, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    const child = this.children.get(node);
    if (!child) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    if (child.exitCode === null && child.signalCode === null) {
      child.kill(signal);
      await exited;
    }
    this.children.delete(node);
  }

  /** Starts a node (again) and waits until it has a route to every other node. */
  async start(node: number): Promise<void> {
    if (this.children.has(node)) return;
    this.spawnNode(node);
    await this.waitFormed();
  }

  /** Kills every node and removes the directory. */
  async stop(): Promise<void> {
    await Promise.all([...this.children.keys()].map((node) => this.kill(node)));
    rmSync(this.root, { recursive: true, force: true });
    clusters.delete(this);
  }

  /** For the process's exit: nothing can be awaited then. */
  killAllNow(): void {
    for (const child of this.children.values()) child.kill('SIGKILL');
    rmSync(this.root, { recursive: true, force: true });
  }

  /** The end of a node's log, for a failure message. */
  logOf(node: number): string {
    try {
      return readFileSync(join(this.root, `node${node}`, 'nats.log'), 'utf8').slice(-3000);
    } catch {
      return '(no log)';
    }
  }

  private async configure(): Promise<void> {
    const nodes = this.options.nodes ?? 3;
    const addresses = this.options.addresses ?? Array.from({ length: nodes }, () => '127.0.0.1');
    const ports = await freePorts('127.0.0.1', nodes * 3);
    this.env = {
      ...process.env,
      CALLWIRE_NATS_ROOT: this.root,
      CALLWIRE_NATS_CLIENT_PORTS: ports.slice(0, nodes).join(' '),
      CALLWIRE_NATS_CLUSTER_PORTS: ports.slice(nodes, 2 * nodes).join(' '),
      CALLWIRE_NATS_HTTP_PORTS: ports.slice(2 * nodes).join(' '),
      CALLWIRE_NATS_ADDRS: addresses.join(' '),
      CALLWIRE_NATS_HOSTS: (this.options.hosts ?? ['a', 'b']).join(' '),
      CALLWIRE_NATS_TLS: this.options.tls ? '1' : '0',
    };
    const env = parseEnv((await run('bash', [NATS_CLUSTER_SCRIPT, 'configure'], { env: this.env })).stdout);
    this.monitorUrls = addresses.map((address, i) => `http://${address}:${ports[2 * nodes + i]}`);
    this.routeUrls = addresses.map((address, i) => `nats-route://${address}:${ports[nodes + i]}`);
    this.urls = env.get('CALLWIRE_NATS_URLS')!.split(',');
    this.ca = env.get('CALLWIRE_NATS_CA');
    this.users = { gateway: { user: env.get('CALLWIRE_NATS_GATEWAY_USER')!, pass: env.get('CALLWIRE_NATS_GATEWAY_PASS')! } };
    for (const [name, user] of env) {
      const m = /^CALLWIRE_NATS_HOST_([A-Z0-9_]+)_USER$/.exec(name);
      if (m) this.users[user] = { user, pass: env.get(`CALLWIRE_NATS_HOST_${m[1]}_PASS`)! };
    }
  }

  private spawnNode(node: number): void {
    const command = [...(this.options.wrap?.(node) ?? []), 'nats-server', '-c', this.configFile(node)];
    // The node logs to its log file; its stderr only says why it could not start at all.
    const child = spawn(command[0]!, command.slice(1), { stdio: ['ignore', 'ignore', 'pipe'] });
    child.stderr!.resume();
    this.children.set(node, child);
  }

  /** Every running node has a route to every other (the script's check of /routez). */
  private async waitFormed(): Promise<void> {
    try {
      await run('bash', [NATS_CLUSTER_SCRIPT, 'wait'], { env: this.env });
    } catch (e) {
      throw new Error(`the NATS cluster did not form: ${(e as { stderr?: string }).stderr ?? String(e)}`);
    }
  }
}
