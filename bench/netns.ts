import { execFileSync } from 'node:child_process';

/**
 * A network namespace with one veth link to this one, made for a measurement or a test
 * and removed after it: traffic to `address` crosses the link, and `loss` drops a share
 * of its packets both ways (iptables' statistic match; this kernel has no netem). Needs root.
 */
export class LossyLink {
  readonly name: string;
  readonly address: string;
  private readonly hostSide: string;

  constructor(index = process.pid % 200) {
    this.name = `cwloss${process.pid}`;
    this.hostSide = `cwh${process.pid}`.slice(0, 15);
    this.address = `10.213.${index}.2`;
    const ns = this.name;
    const peer = `cwn${process.pid}`.slice(0, 15);
    const host = `10.213.${index}.1`;
    run('ip', 'netns', 'add', ns);
    try {
      run('ip', 'link', 'add', this.hostSide, 'type', 'veth', 'peer', 'name', peer);
      run('ip', 'link', 'set', peer, 'netns', ns);
      run('ip', 'addr', 'add', `${host}/30`, 'dev', this.hostSide);
      run('ip', 'link', 'set', this.hostSide, 'up');
      run('ip', 'netns', 'exec', ns, 'ip', 'addr', 'add', `${this.address}/30`, 'dev', peer);
      run('ip', 'netns', 'exec', ns, 'ip', 'link', 'set', peer, 'up');
      run('ip', 'netns', 'exec', ns, 'ip', 'link', 'set', 'lo', 'up');
    } catch (error) {
      this.remove();
      throw error;
    }
    process.once('exit', () => this.remove());
  }

  /** Drops `share` (0 to 1) of the packets entering and leaving the namespace, at random. */
  loss(share: number): void {
    for (const chain of ['INPUT', 'OUTPUT']) run('ip', 'netns', 'exec', this.name, 'iptables', '-F', chain);
    if (share <= 0) return;
    for (const chain of ['INPUT', 'OUTPUT']) {
      run('ip', 'netns', 'exec', this.name, 'iptables', '-A', chain, '-m', 'statistic', '--mode', 'random', '--probability', String(share), '-j', 'DROP');
    }
  }

  /** argv run inside the namespace. */
  exec(argv: string[]): string[] {
    return ['ip', 'netns', 'exec', this.name, ...argv];
  }

  remove(): void {
    try {
      execFileSync('ip', ['netns', 'del', this.name], { stdio: 'ignore' }); // takes its end of the veth, and so both
    } catch {
      // already gone
    }
  }
}

/** Whether this process may make namespaces (root, with iproute2 and iptables). */
export function canMakeNamespaces(): boolean {
  if (process.getuid?.() !== 0) return false;
  try {
    execFileSync('ip', ['netns', 'list'], { stdio: 'ignore' });
    execFileSync('iptables', ['-V'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

function run(command: string, ...args: string[]): void {
  execFileSync(command, args, { stdio: ['ignore', 'ignore', 'pipe'] });
}
