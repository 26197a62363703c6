import { connect, type Client, type ConnectOptions } from '../../src/client-node/index.js';
import { startServer, type RunningServer, type ServerOptions } from '../../src/server/index.js';
import { denoForTests } from './deno-presence.js';
import { Probe, sampleOperations } from './sample-ops.js';
import { until } from './wait.js';

export interface TransportCase {
  readonly name: string;
  url(server: RunningServer): string;
  readonly options: (server: RunningServer) => ConnectOptions;
  /** What the server needs for this case: HTTP/3 runs a Deno edge, so only cases that use it ask for it. */
  readonly server?: ServerOptions;
  /** Why this machine cannot run this case (HTTP/3 without Deno): its tests are skipped, saying so (`skipTitle`). */
  readonly missing?: string | undefined;
}

const deno = await denoForTests();
/** Why this machine cannot run HTTP/3 (the Deno edge and client), or undefined where it can; `npm ci` installs Deno, and .ci/run fails without it. */
export const http3Missing: string | undefined = 'reason' in deno ? `no HTTP/3 here: ${deno.reason}` : undefined;
export const hasHttp3 = http3Missing === undefined;

/** HTTP/3 on, and a keepalive short enough that a lost QUIC connection is found within seconds (§5.5). */
const HTTP3_SERVER: ServerOptions = { http3: true, keepaliveMs: 2000 };

export const transportCases: TransportCase[] = [
  { name: 'WebSocket msgpack', url: (s) => s.wsUrl, options: () => ({ codec: 'msgpack' }) },
  { name: 'WebSocket json', url: (s) => s.wsUrl, options: () => ({ codec: 'json' }) },
  { name: 'WebTransport HTTP/2 msgpack', url: (s) => s.wtUrl!, options: (s) => ({ certHash: s.certHash!, codec: 'msgpack', transport: 'h2' }) },
  { name: 'WebTransport HTTP/2 json', url: (s) => s.wtUrl!, options: (s) => ({ certHash: s.certHash!, codec: 'json', transport: 'h2' }) },
  { name: 'WebTransport HTTP/3 msgpack', url: (s) => s.wtUrl!, options: (s) => ({ certHash: s.certHash!, codec: 'msgpack', transport: 'h3' }), server: HTTP3_SERVER, missing: http3Missing },
  { name: 'WebTransport HTTP/3 json', url: (s) => s.wtUrl!, options: (s) => ({ certHash: s.certHash!, codec: 'json', transport: 'h3' }), server: HTTP3_SERVER, missing: http3Missing },
];

/** One case per carrier, msgpack: WebSocket, WebTransport over HTTP/2 and over HTTP/3 (skipped, saying why, where Deno is missing). */
export const carrierCases: TransportCase[] = [transportCases[0]!, transportCases[2]!, transportCases[4]!];

/**
 * A server on free ports with the sample operations, and the clients a test opens.
 * `settle()` fails the test when a call or connection outlives it.
 */
export class ServerFixture {
  readonly probe = new Probe();
  server!: RunningServer;
  private clients: Client[] = [];

  async start(options: ServerOptions = {}): Promise<this> {
    // HTTP/3 (a Deno edge process per server) only where a test asks for it.
    this.server = await startServer({ port: 0, webTransportPort: 0, docker: false, http3: false, operations: sampleOperations(this.probe), ...options });
    return this;
  }

  async client(transport: TransportCase, extra: ConnectOptions = {}): Promise<Client> {
    const client = await connect(transport.url(this.server), { ...transport.options(this.server), ...extra });
    this.clients.push(client);
    return client;
  }

  liveCalls(): number {
    let n = 0;
    for (const s of this.server.connections()) n += s.stats.liveCalls;
    return n;
  }

  /** Closes the test's clients and checks nothing is left behind on the server. */
  async settle(): Promise<void> {
    const clients = this.clients;
    this.clients = [];
    await Promise.all(clients.map((c) => c.close()));
    await until(() => this.liveCalls() === 0, 'no live calls left on the server');
    await until(() => [...this.server.connections()].length === 0, 'every connection closed');
  }

  async stop(): Promise<void> {
    await Promise.all(this.clients.map((c) => c.close().catch(() => undefined)));
    await this.server?.close();
  }
}
