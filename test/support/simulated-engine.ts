/**
 * A simulated Docker engine: the subset of its API a fleet agent uses (ping, version,
 * the container list and inspect, exec create, start and inspect, events), on a unix
 * socket, with containers that exist only in its memory and execs that exit 0 at once
 * with no output. It lets one process run many agents (bench/fleet-scale.ts) and one
 * agent hold 10,000 containers (test/fleet/table-parts-nats.test.ts), neither of which
 * the real engine of this machine could hold.
 */
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

export interface SimulatedContainer {
  readonly id: string;
  readonly name: string;
  readonly labels: Record<string, string>;
  running: boolean;
}

const IMAGE = 'callwire-simulated:latest';

export class SimulatedEngine {
  readonly containers = new Map<string, SimulatedContainer>();
  /** The execs run so far: what a test reads to know the engine was (or was not) called. */
  execs = 0;
  /** Requests for the container list so far. */
  lists = 0;
  private readonly events = new Set<ServerResponse>();
  private readonly server: Server;

  private constructor(readonly socketPath: string) {
    this.server = createServer((req, res) => this.answer(req, res));
    // `docker exec` start is a hijacked connection: 101, then the multiplexed stream, here empty.
    this.server.on('upgrade', (req: IncomingMessage, socket) => {
      this.execs++;
      socket.end('HTTP/1.1 101 UPGRADED\r\nContent-Type: application/vnd.docker.raw-stream\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n');
    });
  }

  static async start(socketPath: string): Promise<SimulatedEngine> {
    rmSync(socketPath, { force: true });
    const engine = new SimulatedEngine(socketPath);
    await new Promise<void>((resolve, reject) => {
      engine.server.once('error', reject);
      engine.server.listen(socketPath, resolve);
    });
    return engine;
  }

  get address(): string {
    return `unix://${this.socketPath}`;
  }

  /** A running container, announced to whoever follows the events. */
  add(name: string, labels: Record<string, string> = {}): SimulatedContainer {
    const container = { id: randomBytes(32).toString('hex'), name, labels, running: true };
    this.containers.set(container.id, container);
    this.emit('start', container);
    return container;
  }

  /** Many containers at once, announced by one event (as a burst of starts would be). */
  addMany(count: number, label: (i: number) => Record<string, string>, name: (i: number) => string): void {
    let last: SimulatedContainer | undefined;
    for (let i = 0; i < count; i++) {
      last = { id: randomBytes(32).toString('hex'), name: name(i), labels: label(i), running: true };
      this.containers.set(last.id, last);
    }
    if (last) this.emit('start', last);
  }

  async close(): Promise<void> {
    for (const res of this.events) res.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    rmSync(this.socketPath, { force: true });
  }

  private emit(action: string, c: SimulatedContainer): void {
    const line = `${JSON.stringify({ Type: 'container', Action: action, id: c.id, Actor: { ID: c.id, Attributes: { name: c.name } }, time: Math.floor(Date.now() / 1000) })}\n`;
    for (const res of this.events) res.write(line);
  }

  private find(ref: string): SimulatedContainer | undefined {
    const byId = this.containers.get(ref);
    if (byId) return byId;
    for (const c of this.containers.values()) if (c.name === ref || c.id.startsWith(ref)) return c;
    return undefined;
  }

  private answer(req: IncomingMessage, res: ServerResponse): void {
    req.resume();
    const url = new URL(req.url ?? '/', 'http://engine');
    // dockerode may put the API version first: /v1.43/containers/json.
    const path = url.pathname.replace(/^\/v[0-9.]+/, '');
    const json = (status: number, body: unknown): void => {
      res.writeHead(status, { 'Content-Type': 'application/json' }).end(JSON.stringify(body));
    };
    let m: RegExpExecArray | null;
    if (path === '/_ping') return void res.writeHead(200, { 'Content-Type': 'text/plain' }).end('OK');
    if (path === '/version') return json(200, { Version: 'simulated', ApiVersion: '1.43', Os: 'linux', Arch: 'amd64' });
    if (path === '/containers/json') {
      this.lists++;
      const all = url.searchParams.get('all') === 'true' || url.searchParams.get('all') === '1';
      const filters = JSON.parse(url.searchParams.get('filters') || '{}') as { label?: string[] };
      const rows = [...this.containers.values()]
        .filter((c) => all || c.running)
        .filter((c) => (filters.label ?? []).every((f) => (f.includes('=') ? c.labels[f.slice(0, f.indexOf('='))] === f.slice(f.indexOf('=') + 1) : f in c.labels)))
        .map((c) => ({ Id: c.id, Names: [`/${c.name}`], Image: IMAGE, State: c.running ? 'running' : 'exited', Status: c.running ? 'Up' : 'Exited (0)', Labels: c.labels, Created: 1_700_000_000 }));
      return json(200, rows);
    }
    if ((m = /^\/containers\/([^/]+)\/json$/.exec(path))) {
      const c = this.find(decodeURIComponent(m[1]!));
      if (!c) return json(404, { message: `No such container: ${m[1]}` });
      return json(200, { Id: c.id, Name: `/${c.name}`, State: { Running: c.running, Status: c.running ? 'running' : 'exited', Pid: 0 }, Config: { Labels: c.labels, Image: IMAGE } });
    }
    if ((m = /^\/containers\/([^/]+)\/exec$/.exec(path)) && req.method === 'POST') {
      if (!this.find(decodeURIComponent(m[1]!))) return json(404, { message: `No such container: ${m[1]}` });
      return json(201, { Id: randomBytes(32).toString('hex') });
    }
    if ((m = /^\/exec\/([^/]+)\/json$/.exec(path))) return json(200, { ID: m[1], Running: false, ExitCode: 0, Pid: 0 });
    if (path === '/events') {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.flushHeaders();
      this.events.add(res);
      res.on('close', () => this.events.delete(res));
      return;
    }
    json(404, { message: `the simulated engine does not serve ${req.method} ${path}` });
  }
}
