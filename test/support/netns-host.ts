import { execFileSync } from 'node:child_process';

function ip(...args: string[]): void {
  execFileSync('ip', args, { stdio: ['ignore', 'ignore', 'pipe'] });
}

const hosts = new Set<NetnsHost>();
// A test file that ends without remove() leaves no namespace (nor, with it, the veth pair).
process.once('exit', () => {
  for (const host of hosts) host.remove();
});

/**
 * A machine of a fleet in a network namespace of its own (see NetnsLink for two
 * namespaces): a veth pair joins it to the root namespace, where the rest of the fleet
 * runs. `rootAddress` is the root side's address, which a NATS node listens on so the
 * namespace reaches it across the link; `cut()` takes the namespace's end down (a cable
 * pulled: segments are lost, TCP retransmits) and `restore()` brings it back. Processes
 * in the root namespace reach `rootAddress` all the while: it is a local address there.
 * Unix sockets are not network-namespaced: a Docker engine's socket is reachable inside.
 */
export class NetnsHost {
  readonly ns: string;
  readonly rootAddress: string;
  readonly nsAddress: string;
  private readonly rootDevice: string;
  private readonly nsDevice = 'eth0';

  constructor(index = 1) {
    const id = `${process.pid % 100000}x${index}`;
    this.ns = `cwh${id}`;
    this.rootDevice = `cwh${id}`;
    // One /30 per process and index, so two test runs at once never share an address.
    const subnet = `10.${200 + (process.pid % 50)}.${(Math.floor(process.pid / 50) % 64) * 4 + index}`;
    this.rootAddress = `${subnet}.1`;
    this.nsAddress = `${subnet}.2`;
  }

  create(): this {
    hosts.add(this);
    try {
      ip('netns', 'add', this.ns);
      ip('link', 'add', this.rootDevice, 'type', 'veth', 'peer', 'name', this.nsDevice, 'netns', this.ns);
      ip('addr', 'add', `${this.rootAddress}/30`, 'dev', this.rootDevice);
      ip('-n', this.ns, 'addr', 'add', `${this.nsAddress}/30`, 'dev', this.nsDevice);
      ip('link', 'set', this.rootDevice, 'up');
      ip('-n', this.ns, 'link', 'set', this.nsDevice, 'up');
      ip('-n', this.ns, 'link', 'set', 'lo', 'up');
    } catch (e) {
      this.remove();
      throw e;
    }
    return this;
  }

  /** The command prefix that runs a program in the namespace. */
  get prefix(): string[] {
    return ['ip', 'netns', 'exec', this.ns];
  }

  cut(): void {
    ip('-n', this.ns, 'link', 'set', this.nsDevice, 'down');
  }

  restore(): void {
    ip('-n', this.ns, 'link', 'set', this.nsDevice, 'up');
  }

  /** Deletes the namespace, and with it the veth pair; safe to call twice. */
  remove(): void {
    hosts.delete(this);
    try {
      ip('netns', 'del', this.ns);
    } catch {
      // not created, or already gone
    }
  }
}
