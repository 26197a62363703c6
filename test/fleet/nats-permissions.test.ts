import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, PermissionViolationError, type Msg, type NatsConnection, type NodeConnectionOptions, type Subscription } from '@nats-io/transport-node';
import { NatsCluster, type NatsUser } from '../support/nats-cluster.js';
import { freePort } from '../support/ports.js';
import { sleep, until } from '../support/wait.js';

/**
 * The NATS cluster scripts/nats-cluster.sh configures, driven by the raw NATS client: each agent
 * host may publish and subscribe only on its own subjects (fleet design, "NATS users and
 * permissions"; issue 24, security), and a client with every node's URL survives a node's death.
 */

const connections: NatsConnection[] = [];

async function dial(servers: string | string[], who: NatsUser, options: Partial<NodeConnectionOptions> = {}): Promise<NatsConnection> {
  const nc = await connect({ servers, user: who.user, pass: who.pass, name: who.user, ...options });
  connections.push(nc);
  return nc;
}

/** The errors the server reports to a connection asynchronously (its status stream). */
function asyncErrors(nc: NatsConnection): Error[] {
  const errors: Error[] = [];
  void (async () => {
    for await (const status of nc.status()) if (status.type === 'error') errors.push(status.error);
  })();
  return errors;
}

/** Every message a subscription receives, as `subject payload` (one refused ends with its error, in `sub.closed`). */
function received(sub: Subscription): string[] {
  const seen: string[] = [];
  (async () => {
    for await (const m of sub) seen.push(`${m.subject} ${m.string()}`);
  })().catch(() => undefined);
  return seen;
}

async function within<T>(promise: Promise<T>, what: string, timeoutMs = 5000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([promise, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), timeoutMs)))]);
  } finally {
    clearTimeout(timer);
  }
}

function nextMessage(sub: Subscription): Promise<Msg> {
  return within(
    (async () => {
      for await (const m of sub) return m;
      throw new Error(`subscription ${sub.getSubject()} closed: ${String(await sub.closed)}`);
    })(),
    `a message on ${sub.getSubject()}`,
  );
}

/** Closes this file's connections before their cluster goes, so none is left reconnecting. */
async function closeConnections(): Promise<void> {
  await Promise.all(connections.splice(0).map((nc) => nc.close().catch(() => undefined)));
}

describe('NATS permissions of the fleet (scripts/nats-cluster.sh)', () => {
  let cluster: NatsCluster;
  beforeAll(async () => {
    cluster = await NatsCluster.start({ hosts: ['a', 'b'] });
  });
  afterAll(async () => {
    await closeConnections();
    await cluster?.stop();
  });

  it('an agent publishes its own heartbeat and the gateway receives it', async () => {
    const gateway = await dial(cluster.urls[0]!, cluster.users['gateway']!);
    const beats = gateway.subscribe('callwire.host.*.beat');
    await gateway.flush();
    const a = await dial(cluster.urls[0]!, cluster.users['a']!);
    a.publish('callwire.host.a.beat', 'a is up');
    const beat = await nextMessage(beats);
    expect([beat.subject, beat.string()]).toEqual(['callwire.host.a.beat', 'a is up']);
  });

  it("an agent cannot publish as another host: the server refuses it and the gateway never receives it", async () => {
    const gateway = await dial(cluster.urls[0]!, cluster.users['gateway']!);
    const beats = received(gateway.subscribe('callwire.host.*.beat'));
    const links = received(gateway.subscribe('callwire.host.*.from.*'));
    await gateway.flush();
    const a = await dial(cluster.urls[0]!, cluster.users['a']!);
    const errors = asyncErrors(a);
    a.publish('callwire.host.b.beat', 'forged beat');
    a.publish('callwire.host.b.from.gw1', 'forged link message');
    // The same connection's later messages arrive in order: once these are in, the forged ones
    // would have been before them.
    a.publish('callwire.host.a.beat', 'marker');
    a.publish('callwire.host.a.from.gw1', 'marker');
    await until(() => beats.length > 0 && links.length > 0, 'the markers');
    expect(beats).toEqual(['callwire.host.a.beat marker']);
    expect(links).toEqual(['callwire.host.a.from.gw1 marker']);
    await until(() => errors.length >= 2, 'two permission errors');
    expect(errors.map((e) => e instanceof PermissionViolationError && `${e.operation} ${e.subject}`)).toEqual([
      'publish callwire.host.b.beat',
      'publish callwire.host.b.from.gw1',
    ]);
  });

  it("only the gateway may publish on a host's calls (a.to) and on callwire.fleet.hello: another host's user, and a's own, are refused and a never hears them", async () => {
    const gateway = await dial(cluster.urls[0]!, cluster.users['gateway']!);
    const a = await dial(cluster.urls[0]!, cluster.users['a']!);
    const b = await dial(cluster.urls[0]!, cluster.users['b']!);
    const calls = received(a.subscribe('callwire.host.a.to'));
    const hellos = received(a.subscribe('callwire.fleet.hello'));
    await a.flush();
    const errorsOfB = asyncErrors(b);
    const errorsOfA = asyncErrors(a);
    // Host b poses as a gateway: it asks a for its table, and opens a connection naming a caller of its choice.
    b.publish('callwire.host.a.to', 'forged open from b');
    b.publish('callwire.fleet.hello', '{"hosts":["a"]}');
    a.publish('callwire.host.a.to', 'forged open from a itself');
    a.publish('callwire.fleet.hello', '{}');
    await Promise.all([a.flush(), b.flush()]);
    // The gateway's messages reach a in order: once its markers are in, the forged ones would have been before them.
    gateway.publish('callwire.host.a.to', 'marker');
    gateway.publish('callwire.fleet.hello', 'marker');
    await until(() => calls.length > 0 && hellos.length > 0, 'the markers');
    expect(calls).toEqual(['callwire.host.a.to marker']);
    expect(hellos).toEqual(['callwire.fleet.hello marker']);
    await until(() => errorsOfB.length >= 2 && errorsOfA.length >= 2, 'four permission errors');
    const refusals = (errors: Error[]) => errors.map((e) => e instanceof PermissionViolationError && `${e.operation} ${e.subject}`);
    expect(refusals(errorsOfB)).toEqual(['publish callwire.host.a.to', 'publish callwire.fleet.hello']);
    expect(refusals(errorsOfA)).toEqual(['publish callwire.host.a.to', 'publish callwire.fleet.hello']);
  });

  it("an agent cannot subscribe to another host's calls; that host can", async () => {
    const gateway = await dial(cluster.urls[0]!, cluster.users['gateway']!);
    const a = await dial(cluster.urls[0]!, cluster.users['a']!);
    const b = await dial(cluster.urls[0]!, cluster.users['b']!);
    const stolen = a.subscribe('callwire.host.b.to');
    const stolenSeen = received(stolen);
    const own = a.subscribe('callwire.host.a.to');
    const toB = b.subscribe('callwire.host.b.to');
    await Promise.all([a.flush(), b.flush()]);
    gateway.publish('callwire.host.b.to', 'call for b');
    gateway.publish('callwire.host.a.to', 'marker');
    expect((await nextMessage(toB)).string()).toBe('call for b');
    // The server answers a's subscriptions in order, and sends the gateway's messages to a in
    // order: once the marker is in, the refusal and anything for b would have come before it.
    expect((await nextMessage(own)).string()).toBe('marker');
    expect(stolenSeen).toEqual([]);
    const closedBy = await within(stolen.closed, 'the refusal of the subscription');
    expect(closedBy).toBeInstanceOf(PermissionViolationError);
    expect([(closedBy as PermissionViolationError).operation, (closedBy as PermissionViolationError).subject]).toEqual(['subscription', 'callwire.host.b.to']);
  });

  it('an agent hears its own host\'s beats (another agent of its host id), never another host\'s', async () => {
    const a = await dial(cluster.urls[0]!, cluster.users['a']!);
    const a2 = await dial(cluster.urls[0]!, cluster.users['a']!);
    const b = await dial(cluster.urls[0]!, cluster.users['b']!);
    const others = a.subscribe('callwire.host.b.beat');
    const othersSeen = received(others);
    const own = a.subscribe('callwire.host.a.beat');
    await a.flush();
    b.publish('callwire.host.b.beat', 'b is up');
    a2.publish('callwire.host.a.beat', 'a second agent of a');
    await Promise.all([a2.flush(), b.flush()]);
    expect((await nextMessage(own)).string()).toBe('a second agent of a');
    expect(othersSeen).toEqual([]);
    const closedBy = await within(others.closed, 'the refusal of the subscription');
    expect([(closedBy as PermissionViolationError).operation, (closedBy as PermissionViolationError).subject]).toEqual(['subscription', 'callwire.host.b.beat']);
  });

  it('a wrong password, another user\'s password and no credentials are refused', async () => {
    const url = cluster.urls[0]!;
    const refusals = await Promise.all(
      [
        { user: 'a', pass: 'wrong' },
        { user: 'a', pass: cluster.users['b']!.pass },
        { user: 'gateway', pass: cluster.users['a']!.pass },
      ].map((who) => dial(url, who).then(() => 'connected', (e: Error) => e.message)),
    );
    for (const refusal of refusals) expect(refusal).toMatch(/Authorization Violation/i);
    expect(await connect({ servers: url }).then(() => 'connected', (e: Error) => e.message)).toMatch(/Authorization Violation/i);
  });

  it('a server without the routes\' password cannot join the cluster (and so read its messages)', async () => {
    const [port, httpPort] = [await freePort('127.0.0.1'), await freePort('127.0.0.1')];
    const config = join(cluster.root, 'rogue.conf');
    writeFileSync(config, `listen: "127.0.0.1:${port}"\nhttp: "127.0.0.1:${httpPort}"\ncluster { name: "callwire", listen: "127.0.0.1:-1", routes: ["${cluster.routeUrls[0]}"] }\n`);
    const rogue = spawn('nats-server', ['-c', config], { stdio: 'ignore' });
    try {
      await until(() => /authentication error/.test(cluster.logOf(1)), 'node 1 refusing the route');
      const routes = async (monitor: string) => ((await (await fetch(`${monitor}/routez`)).json()) as { num_routes: number }).num_routes;
      // The route is tried, and refused, before the rogue's own monitor may listen: wait for it.
      const deadline = Date.now() + 10_000;
      while (!(await fetch(`http://127.0.0.1:${httpPort}/varz`).then(() => true, () => false)) && rogue.exitCode === null) {
        if (Date.now() > deadline) throw new Error("timed out waiting for the rogue server's monitor");
        await sleep(50);
      }
      expect(rogue.exitCode, 'the rogue server exited').toBeNull();
      expect(await routes(`http://127.0.0.1:${httpPort}`)).toBe(0);
      expect(await routes(cluster.monitorUrls[0]!)).toBe(2);
    } finally {
      rogue.kill('SIGKILL');
    }
  });

  it('a client with every URL survives a node killed with SIGKILL: it reconnects and publish and subscribe work through the others', async () => {
    const fast = { noRandomize: true, reconnectTimeWait: 50, pingInterval: 1000 };
    const gateway = await dial(cluster.urls, cluster.users['gateway']!, fast);
    const a = await dial([...cluster.urls].reverse(), cluster.users['a']!, fast);
    expect([gateway.getServer(), a.getServer()]).toEqual([cluster.urls[0]!.replace('nats://', ''), cluster.urls[2]!.replace('nats://', '')]);
    const beats = received(gateway.subscribe('callwire.host.a.beat'));
    const calls = received(a.subscribe('callwire.host.a.to'));
    const reconnected = (async () => {
      for await (const s of gateway.status()) if (s.type === 'reconnect') return s.server;
      return undefined;
    })();
    await Promise.all([gateway.flush(), a.flush()]);

    await cluster.kill(1, 'SIGKILL');
    expect(await within(reconnected, 'the reconnection')).not.toBe(cluster.urls[0]!.replace('nats://', ''));
    // Interest crosses the route to a's node soon after the resubscription; until then a beat
    // may go nowhere (core NATS is at most once), so a keeps beating as an agent does.
    let n = 0;
    const beating = setInterval(() => a.publish('callwire.host.a.beat', `beat ${++n}`), 20);
    try {
      await until(() => beats.length > 0, 'a beat through the surviving nodes');
    } finally {
      clearInterval(beating);
    }
    await until(() => {
      gateway.publish('callwire.host.a.to', 'call');
      return calls.length > 0;
    }, 'a call through the surviving nodes');
    expect(calls[0]).toBe('callwire.host.a.to call');
    await cluster.start(1);
  });
});

describe('NATS over TLS (CALLWIRE_NATS_TLS=1)', () => {
  let cluster: NatsCluster;
  beforeAll(async () => {
    cluster = await NatsCluster.start({ hosts: ['a'], nodes: 1, tls: true });
  });
  afterAll(async () => {
    await closeConnections();
    await cluster?.stop();
  });

  it('serves tls:// to a client holding the CA; a client without it refuses the server', async () => {
    expect(cluster.urls[0]).toMatch(/^tls:\/\//);
    const gateway = await dial(cluster.urls[0]!, cluster.users['gateway']!, { tls: { caFile: cluster.ca! } });
    const beats = gateway.subscribe('callwire.host.a.beat');
    await gateway.flush();
    const a = await dial(cluster.urls[0]!, cluster.users['a']!, { tls: { caFile: cluster.ca! } });
    a.publish('callwire.host.a.beat', 'over tls');
    expect((await nextMessage(beats)).string()).toBe('over tls');
    const withoutCa = await dial(cluster.urls[0]!, cluster.users['a']!).then(
      () => 'connected',
      (e: Error) => `${e.message} ${String((e.cause as Error | undefined)?.message ?? '')}`,
    );
    expect(withoutCa).toMatch(/certificate/i);
  });

  it('closes a plaintext connection before it can authenticate', async () => {
    const { hostname, port } = new URL(cluster.urls[0]!);
    const socket = createConnection(Number(port), hostname);
    let heard = '';
    socket.on('data', (chunk: Buffer) => (heard += chunk.toString('latin1')));
    socket.on('error', () => undefined);
    const closed = new Promise((resolve) => socket.once('close', resolve));
    await until(() => heard.includes('\r\n'), 'the server INFO');
    expect(heard).toMatch(/^INFO .*"tls_required":true/);
    const { user, pass } = cluster.users['a']!;
    socket.write(`CONNECT ${JSON.stringify({ user, pass, verbose: false, pedantic: false })}\r\nPING\r\n`);
    await within(closed, 'the server closing the plaintext connection');
    expect(heard).not.toContain('PONG');
  });
});
