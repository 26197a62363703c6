import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type ServerOptions } from '../../src/server/index.js';
import { NatsCluster } from '../support/nats-cluster.js';
import { freePort } from '../support/ports.js';
import { openFileHandles, ownListeningPorts, ownTcpSockets } from '../support/own-handles.js';
import { until } from '../support/wait.js';

/**
 * startServer's one teardown path (src/server/teardown.ts): a part that fails to start
 * undoes every part started before it, and close() undoes them all, over real sockets,
 * files and a real NATS cluster. "Nothing left" is read from this process's own
 * descriptors (/proc/self/fd), so another process's ports do not count.
 */
describe('startServer: a failed start and close() leave nothing open', () => {
  let nats: NatsCluster;
  let dir: string;
  let blocker: Server | undefined;
  const before = ownListeningPorts();

  beforeAll(async () => {
    nats = await NatsCluster.start({ nodes: 1, hosts: [] });
  }, 60_000);
  afterAll(async () => {
    await nats?.stop();
  });
  afterEach(async () => {
    await new Promise((resolve) => (blocker ? blocker.close(resolve) : resolve(undefined)));
    blocker = undefined;
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const natsPort = (): number => Number(new URL(nats.urls[0]!).port);
  const gateway = (): NonNullable<ServerOptions['fleet']> => ({ servers: nats.urls, ...nats.users['gateway']! });
  const connectionsToNats = (): number => ownTcpSockets().filter((s) => !s.listening && s.remotePort === natsPort()).length;

  /** A TCP port some other listener holds. */
  async function takenPort(): Promise<number> {
    blocker = createServer();
    await new Promise<void>((resolve) => blocker!.listen(0, '127.0.0.1', () => resolve()));
    return (blocker.address() as { port: number }).port;
  }

  function files(): { audit: string; socket: string; records: string } {
    dir = mkdtempSync(join(tmpdir(), 'callwire-teardown-'));
    return { audit: join(dir, 'audit.log'), socket: join(dir, 'callwire.sock'), records: join(dir, 'records') };
  }

  /** Asserts that what a server had started is gone: its ports, its unix socket, its audit file's descriptor, its NATS connections. */
  async function expectNothingOf(server: { port?: number; audit: string; socket: string }, blocked: number[] = []): Promise<void> {
    await until(() => connectionsToNats() === 0, "the gateway's NATS connections closed");
    expect(ownListeningPorts()).toEqual([...before, ...blocked].sort((a, b) => a - b));
    expect(openFileHandles(server.audit)).toBe(0);
    expect(existsSync(server.socket)).toBe(false);
  }

  it('a WebTransport port already taken: the gateway, the HTTP port, the unix socket, the audit file and the recorder started before it are undone, and its error is the one thrown', async () => {
    const { audit, socket, records } = files();
    const port = await freePort('127.0.0.1');
    const taken = await takenPort();
    const start = startServer({ port, webTransportPort: taken, http3: false, socketPath: socket, auditPath: audit, recordDir: records, fleet: gateway() });
    await expect(start).rejects.toThrow(/EADDRINUSE/);
    await expectNothingOf({ port, audit, socket }, [taken]);
  });

  it('a unix socket path a regular file holds: the HTTP port and the gateway opened before it are closed', async () => {
    const { audit, socket } = files();
    writeFileSync(socket, 'not a socket');
    const port = await freePort('127.0.0.1');
    await expect(startServer({ port, webTransportPort: false, socketPath: socket, auditPath: audit, fleet: gateway() })).rejects.toThrow(/is not a socket/);
    rmSync(socket);
    await expectNothingOf({ port, audit, socket });
  });

  it('the HTTP port already taken: the gateway leaves NATS and the audit file is closed', async () => {
    const { audit, socket } = files();
    const taken = await takenPort();
    await expect(startServer({ port: taken, webTransportPort: false, auditPath: audit, fleet: gateway() })).rejects.toThrow(/EADDRINUSE/);
    await expectNothingOf({ audit, socket }, [taken]);
  });

  it('a gateway that cannot reach NATS: the audit file opened before it is closed, and nothing listens', async () => {
    const { audit, socket } = files();
    const nowhere = await freePort('127.0.0.1');
    await expect(startServer({ port: 0, webTransportPort: false, auditPath: audit, fleet: { servers: [`nats://127.0.0.1:${nowhere}`], insecure: true } })).rejects.toThrow(/cannot connect to NATS/);
    await expectNothingOf({ audit, socket });
  });

  it('an audit path that cannot be opened: nothing is left listening or connected to NATS', async () => {
    const { socket } = files();
    const audit = join(dir, 'no-such-dir', 'audit.log');
    await expect(startServer({ port: 0, webTransportPort: false, auditPath: audit, fleet: gateway() })).rejects.toThrow(/ENOENT/);
    await expectNothingOf({ audit, socket });
  });

  it('close() undoes every part, the same way; a second close() is the first', async () => {
    const { audit, socket, records } = files();
    const server = await startServer({ port: 0, webTransportPort: 0, http3: false, socketPath: socket, auditPath: audit, recordDir: records, fleet: gateway() });
    expect(openFileHandles(audit)).toBe(1);
    expect(connectionsToNats()).toBeGreaterThan(0);
    expect(existsSync(socket)).toBe(true);
    const wsPort = Number(new URL(server.wsUrl).port);
    const wtPort = Number(new URL(server.wtUrl!).port);
    expect(ownListeningPorts()).toEqual(expect.arrayContaining([wsPort, wtPort]));
    await Promise.all([server.close(), server.close()]);
    await expectNothingOf({ audit, socket });
  });
});
