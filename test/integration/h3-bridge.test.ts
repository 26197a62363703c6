import { readFileSync } from 'node:fs';
import { connect as connectUnix } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { childPids, commandLine } from '../support/proc.js';
import { hasHttp3, http3Missing, ServerFixture, transportCases } from '../support/server-fixture.js';
import { skipTitle } from '../support/skip.js';
import { sleep, until } from '../support/wait.js';

// The bridge between Node and a Deno HTTP/3 edge (src/webtransport/bridge-protocol.ts; its
// frames after a session's opening line: test/integration/h3-bridge-mux.test.ts), spoken here by hand to each side's listener: the server's bridge socket (Node) and the
// client edge's socket (Deno). Each side's address and secret are in its edge's config
// file, which this process, as the edge's owner, may read.

/** The config file of this process's edge running `program` for which `pick` is true. */
function edgeConfig(program: string, pick: (config: Record<string, unknown>) => boolean): { socket: string; secret: string } {
  for (const pid of childPids(process.pid)) {
    const argv = commandLine(pid);
    if (!argv.some((arg) => arg.endsWith(`edge/${program}`))) continue;
    const config = JSON.parse(readFileSync(argv.at(-1)!, 'utf8')) as Record<string, unknown>;
    if (pick(config)) return { socket: String(config['socket']), secret: String(config['secret']) };
  }
  throw new Error(`no edge/${program} among this process's children`);
}

interface BridgeConnection {
  /** Lines received so far. */
  readonly lines: string[];
  /** Resolves when the other side has closed the connection; fails the test after 10 s. */
  readonly closed: Promise<void>;
  send(line: unknown): void;
  close(): void;
}

/** A raw connection to a bridge socket that sends `hello` first. */
function bridge(path: string, hello: unknown): BridgeConnection {
  const socket = connectUnix(path);
  const lines: string[] = [];
  let pending = '';
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    pending += chunk;
    const parts = pending.split('\n');
    pending = parts.pop()!;
    lines.push(...parts);
  });
  socket.on('error', () => undefined);
  let isClosed = false;
  socket.once('close', () => (isClosed = true));
  const closed = until(() => isClosed, 'the bridge to close the connection', 10_000);
  closed.catch(() => undefined);
  const send = (line: unknown): void => void socket.write(`${typeof line === 'string' ? line : JSON.stringify(line)}\n`);
  send(hello);
  return { lines, closed, send, close: () => socket.destroy() };
}

/** Waits until the connection has closed: a bridge side that refuses never answers, it hangs up. */
async function refusedUnanswered(connection: BridgeConnection): Promise<void> {
  await connection.closed;
  expect(connection.lines).toEqual([]);
}

const otherSecret = (secret: string): string => secret.replace(/^./, (c) => (c === '0' ? '1' : '0'));

describe.skipIf(!hasHttp3)(skipTitle('the HTTP/3 bridge: one schema, one secret check, on both sides', http3Missing), () => {
  const h3 = new ServerFixture();
  beforeAll(() => h3.start({ http3: true }).then(() => undefined));
  afterEach(() => h3.settle());
  afterAll(() => h3.stop());

  const serverBridge = (): { socket: string; secret: string } => edgeConfig('h3-server-edge.ts', (c) => c['port'] === Number(new URL(h3.server.wtUrl!).port));
  const sessionUrl = (): string => h3.server.wtUrl!;

  /** A call over HTTP/3 through the real edges: the server is alive and serving. */
  async function serves(): Promise<void> {
    const client = await h3.client(transportCases[4]!);
    expect(client.carrier).toBe('http/3');
    expect(await client.call('test/echo', { text: 'still here' })).toEqual({ text: 'still here' });
  }

  it('the server\'s side (Node) refuses a wrong secret and openers that fail the schema, unanswered; the right secret with the same opener is accepted; the server serves on', async () => {
    const { socket, secret } = serverBridge();
    await refusedUnanswered(bridge(socket, { type: 'session', secret: otherSecret(secret), url: sessionUrl() }));
    await refusedUnanswered(bridge(socket, { type: 'session', secret, url: 42 }));
    await refusedUnanswered(bridge(socket, { type: 'session', secret, url: sessionUrl(), path: '/callwire' }));
    await refusedUnanswered(bridge(socket, { type: 'stream', secret, session: 'x', n: -1 }));
    await refusedUnanswered(bridge(socket, 'not json'));

    const accepted = bridge(socket, { type: 'session', secret, url: sessionUrl() });
    await until(() => accepted.lines.length > 0, 'an answer to the right secret');
    expect(JSON.parse(accepted.lines[0]!)).toMatchObject({ type: 'accepted', id: expect.any(String) });
    accepted.close();
    await serves();
  });

  it('the server\'s side (Node) keeps at most 64 KiB of an opening line without its newline: one byte more and the connection is closed, unanswered', async () => {
    const { socket: path } = serverBridge();
    const socket = connectUnix(path);
    socket.on('error', () => undefined);
    let isClosed = false;
    socket.once('close', () => (isClosed = true));
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    socket.write(Buffer.alloc(64 * 1024, 'x'));
    await sleep(500);
    expect(isClosed, 'closed at 64 KiB').toBe(false);
    socket.write('x');
    await until(() => isClosed, 'the connection closed one byte past 64 KiB', 5000);
    await serves();
  });

  it('the client\'s edge (Deno) refuses a wrong secret and openers that fail the schema, unanswered; the right secret with the same opener opens a session', async () => {
    await serves(); // starts this process's client edge
    const { socket, secret } = edgeConfig('h3-client-edge.ts', () => true);
    const sessions = (): number => [...h3.server.connections()].length;
    const before = sessions();
    const opener = { type: 'session', url: sessionUrl(), certHash: h3.server.certHash!, idleTimeoutMs: 5000 };
    await refusedUnanswered(bridge(socket, { ...opener, secret: otherSecret(secret) }));
    await refusedUnanswered(bridge(socket, { ...opener, secret, certHash: 'zz' }));
    await refusedUnanswered(bridge(socket, { ...opener, secret, idleTimeoutMs: 'soon' }));
    await refusedUnanswered(bridge(socket, { secret, kind: 'session', url: sessionUrl() }));

    const accepted = bridge(socket, { ...opener, secret });
    await until(() => accepted.lines.length > 0, 'an answer to the right secret', 10_000);
    expect(JSON.parse(accepted.lines[0]!)).toMatchObject({ type: 'accepted', id: expect.any(String) });
    await until(() => sessions() === before + 1, 'the session it opened, on the server');
    accepted.close();
    await until(() => sessions() === before, 'the session it opened closed with its bridge connection');
    // The edge is still the one this process's calls ride.
    await serves();
    expect(edgeConfig('h3-client-edge.ts', () => true).socket).toBe(socket);
  });
});
