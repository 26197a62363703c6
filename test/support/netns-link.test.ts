import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createServer, type Server } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { NetnsLink, netnsUnavailable } from './netns-link.js';
import { until } from './wait.js';

const unavailable = netnsUnavailable();
const PORT = 7000;

/** A server that sends a line every 20 ms to whoever connects. */
const TICKER = `require('net').createServer((s) => { s.on('error', (e) => console.log('error ' + e.code)); const t = setInterval(() => s.write('tick\\n'), 20); s.on('close', () => clearInterval(t)); }).listen(${PORT}, process.argv[1], () => console.log('listening'))`;
/** A client that prints what happens to its connection; with "chatty" it also writes every 20 ms. */
const WATCHER = `const s = require('net').connect(Number(process.argv[2]), process.argv[1]); let n = 0; s.on('connect', () => console.log('connected')); s.on('data', (d) => { n += d.length; console.log('bytes ' + n + ' at ' + Date.now()); }); s.on('error', (e) => console.log('error ' + e.code)); s.on('close', () => console.log('closed')); if (process.argv[3] === 'chatty') setInterval(() => s.writable && s.write('x'), 20);`;

class Watched {
  out = '';
  readonly child: ChildProcess;
  constructor(prefix: string[], script: string, args: string[]) {
    this.child = spawn(prefix[0]!, [...prefix.slice(1), process.execPath, '-e', script, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    this.child.stdout!.on('data', (d: Buffer) => (this.out += d.toString()));
  }
  bytes(): number {
    return Number(/bytes (\d+) at \d+\n(?![\s\S]*bytes)/.exec(this.out)?.[1] ?? 0);
  }
  /** The longest time between two reads, in ms. */
  longestSilence(): number {
    const times = [...this.out.matchAll(/^bytes \d+ at (\d+)$/gm)].map((m) => Number(m[1]));
    return Math.max(0, ...times.slice(1).map((t, i) => t - times[i]!));
  }
  stop(): void {
    this.child.kill('SIGKILL');
  }
}

/**
 * The namespace link the resume tests break: a client in one namespace reaches the
 * server in the other and nothing else; `down` loses segments (TCP retransmits
 * and the connection lives on); `reject` resets it.
 */
describe.skipIf(unavailable)(`NetnsLink: two namespaces and a veth pair${unavailable ? ` (skipped: ${unavailable})` : ''}`, () => {
  const link = new NetnsLink();
  let server: Watched;
  const clients: Watched[] = [];
  const client = (...args: string[]): Watched => {
    const c = new Watched(link.inClient, WATCHER, args);
    clients.push(c);
    return c;
  };
  beforeAll(async () => {
    link.create();
    server = new Watched(link.inServer, TICKER, [link.serverAddress]);
    await until(() => server.out.includes('listening'), 'the ticker listening', 10_000);
  });
  afterEach(() => {
    for (const c of clients.splice(0)) c.stop();
  });
  afterAll(() => {
    server?.stop();
    link.remove();
    expect(execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' })).not.toContain(link.clientNs);
  });

  it('the client reaches the server across the link, and not the host: it runs in its own namespace', async () => {
    const host: Server = createServer((s) => s.end());
    await new Promise<void>((resolve) => host.listen(0, '127.0.0.1', resolve));
    try {
      const across = client(link.serverAddress, String(PORT));
      await until(() => across.bytes() > 0, 'ticks across the link', 10_000);
      const toHost = client('127.0.0.1', String((host.address() as AddressInfo).port));
      await until(() => toHost.out.includes('closed'), 'the host attempt ended', 10_000);
      expect(toHost.out).toMatch(/^error ECONNREFUSED$/m);
    } finally {
      host.close();
    }
  });

  it('down(ms): segments are lost meanwhile, and the same connection carries on after it', async () => {
    const c = client(link.serverAddress, String(PORT));
    await until(() => c.bytes() > 0, 'first ticks', 10_000);
    await link.down(1500);
    const after = c.bytes();
    await until(() => c.bytes() > after + 100, 'ticks after the link came back', 15_000);
    // A tick every 20 ms, and nothing while the link was down.
    expect(c.longestSilence()).toBeGreaterThanOrEqual(1000);
    expect(c.out).not.toMatch(/closed|error/);
    expect(c.out.match(/connected/g)).toHaveLength(1);
  });

  it('reject(ms): a connection that sends meanwhile is reset, at both ends', async () => {
    const c = client(link.serverAddress, String(PORT), 'chatty');
    await until(() => c.bytes() > 0, 'first ticks', 10_000);
    const resetsBefore = server.out.match(/^error ECONNRESET$/gm)?.length ?? 0;
    await link.reject(500);
    await until(() => c.out.includes('closed'), 'the connection closed', 10_000);
    expect(c.out).toMatch(/^error ECONNRESET$/m);
    await until(() => (server.out.match(/^error ECONNRESET$/gm)?.length ?? 0) > resetsBefore, 'the server end reset', 10_000);
  });
});
