import { execFileSync } from 'node:child_process';
import { sleep } from './wait.js';

const PREFIX = 'cwt';

function ip(...args: string[]): string {
  return execFileSync('ip', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Namespaces a killed test run left behind (their creator's process is gone). */
function sweepStale(): void {
  for (const line of ip('netns', 'list').split('\n')) {
    const m = new RegExp(`^(${PREFIX}(\\d+)-\\d+[sc])\\b`).exec(line);
    if (m && !alive(Number(m[2]))) ip('netns', 'del', m[1]!);
  }
}

/** Why this machine cannot build a link (not root, no `ip netns`, no iptables), or undefined when it can. */
export function netnsUnavailable(): string | undefined {
  const probe = `${PREFIX}${process.pid}-0s`;
  try {
    ip('netns', 'add', probe);
    try {
      execFileSync('ip', ['netns', 'exec', probe, 'iptables', '-S'], { stdio: 'pipe' });
    } finally {
      ip('netns', 'del', probe);
    }
    return undefined;
  } catch (e) {
    return `no network namespaces here (ip netns and iptables, as root): ${(e as { stderr?: Buffer | string }).stderr?.toString().trim() || (e as Error).message}`;
  }
}

let created = 0;

/**
 * A network link between two network namespaces of our own, joined by a veth
 * pair: the server runs in one (`inServer`), the client in the other (`inClient`),
 * so a test can break the link the way a network breaks, below TCP: `down(ms)`
 * takes the client's end down (a cable pulled: segments are lost and TCP retransmits;
 * the connection may well survive), `reject(ms)` answers every segment either way
 * with a reset (the connection breaks on its next segment). Needs root.
 */
export class NetnsLink {
  readonly serverNs: string;
  readonly clientNs: string;
  readonly serverAddress = '10.0.0.1';
  readonly clientAddress = '10.0.0.2';
  private readonly clientDevice = 'v1';

  constructor() {
    const base = `${PREFIX}${process.pid}-${++created}`;
    this.serverNs = `${base}s`;
    this.clientNs = `${base}c`;
  }

  create(): this {
    sweepStale();
    try {
      ip('netns', 'add', this.serverNs);
      ip('netns', 'add', this.clientNs);
      ip('link', 'add', 'v0', 'netns', this.serverNs, 'type', 'veth', 'peer', 'name', this.clientDevice, 'netns', this.clientNs);
      ip('-n', this.serverNs, 'addr', 'add', `${this.serverAddress}/30`, 'dev', 'v0');
      ip('-n', this.clientNs, 'addr', 'add', `${this.clientAddress}/30`, 'dev', this.clientDevice);
      for (const [ns, dev] of [[this.serverNs, 'v0'], [this.clientNs, this.clientDevice], [this.serverNs, 'lo'], [this.clientNs, 'lo']] as const) {
        ip('-n', ns, 'link', 'set', dev, 'up');
      }
    } catch (e) {
      this.remove();
      throw e;
    }
    return this;
  }

  /** The command prefix that runs a program in the server's namespace. */
  get inServer(): string[] {
    return ['ip', 'netns', 'exec', this.serverNs];
  }

  get inClient(): string[] {
    return ['ip', 'netns', 'exec', this.clientNs];
  }

  /** The client's end of the link down for `ms`, then up again. */
  async down(ms: number): Promise<void> {
    ip('-n', this.clientNs, 'link', 'set', this.clientDevice, 'down');
    try {
      await sleep(ms);
    } finally {
      ip('-n', this.clientNs, 'link', 'set', this.clientDevice, 'up');
    }
  }

  /** For `ms`, every TCP segment into or out of the client's namespace is answered with a reset. */
  async reject(ms: number): Promise<void> {
    // Resets themselves pass: the ones this rule sends go out through OUTPUT too.
    const rule = ['-p', 'tcp', '--tcp-flags', 'RST', 'NONE', '-j', 'REJECT', '--reject-with', 'tcp-reset'];
    this.iptables('-A', 'INPUT', ...rule);
    this.iptables('-A', 'OUTPUT', ...rule);
    try {
      await sleep(ms);
    } finally {
      this.iptables('-F');
    }
  }

  /** Deletes both namespaces (and with them the veth pair); safe to call twice. */
  remove(): void {
    for (const ns of [this.serverNs, this.clientNs]) {
      try {
        ip('netns', 'del', ns);
      } catch {
        // not created, or already gone
      }
    }
  }

  private iptables(...args: string[]): void {
    execFileSync('ip', ['netns', 'exec', this.clientNs, 'iptables', ...args], { stdio: 'ignore' });
  }
}
