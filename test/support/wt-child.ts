import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createInterface } from 'node:readline';
import { expect } from 'vitest';
import { connect } from '../../src/client-node/index.js';
import { exitingWithParent } from './cli.js';

const script = new URL('./wt-child-server.ts', import.meta.url).pathname;

/** The addresses the child server printed. */
export interface ChildAddresses {
  readonly wsUrl: string;
  readonly wtUrl: string;
  readonly certHash: string;
  readonly http3: boolean;
}

/** The server of test/support/wt-child-server.ts as a child process: its exit is visible, and its memory measurable. */
export class WtChildServer {
  private child!: ChildProcessWithoutNullStreams;
  private lines: string[] = [];
  private waiters: ((line: string) => void)[] = [];
  stderr = '';
  addresses!: ChildAddresses;

  async start(options: { http3?: boolean } = {}): Promise<this> {
    this.lines = [];
    this.waiters = [];
    this.stderr = '';
    this.child = spawn(process.execPath, ['--expose-gc', '--import', 'tsx', script, ...(options.http3 ? ['--http3'] : [])], { stdio: 'pipe', env: exitingWithParent({ ...process.env, DEBUG: '' }) });
    this.child.stderr.on('data', (chunk: Buffer) => (this.stderr = (this.stderr + chunk.toString()).slice(-20_000)));
    createInterface({ input: this.child.stdout }).on('line', (line) => {
      const waiter = this.waiters.shift();
      if (waiter) waiter(line);
      else this.lines.push(line);
    });
    this.addresses = JSON.parse(await this.nextLine(30_000)) as ChildAddresses;
    return this;
  }

  get pid(): number {
    return this.child.pid!;
  }

  /** Whether the process has exited (a kill by a peer). */
  get exited(): boolean {
    return this.child.exitCode !== null || this.child.signalCode !== null;
  }

  /** Its resident memory after forced collections, and its open connections. */
  async rss(): Promise<{ rss: number; sessions: number }> {
    this.child.stdin.write('rss\n');
    return JSON.parse(await this.nextLine(30_000)) as { rss: number; sessions: number };
  }

  /** The process runs, and a call on a fresh WebTransport session over HTTP/2 is answered. */
  async expectServing(): Promise<void> {
    expect(this.exited, `the server exited; stderr: ${this.stderr.slice(-3000)}`).toBe(false);
    const client = await connect(this.addresses.wtUrl, { certHash: this.addresses.certHash, codec: 'msgpack', transport: 'h2' });
    try {
      expect(await client.call('test/echo', { text: 'still here' })).toEqual({ text: 'still here' });
    } finally {
      await client.close();
    }
    expect(this.exited).toBe(false);
  }

  async stop(): Promise<void> {
    if (this.exited) return;
    const gone = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.stdin.end();
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 5000);
    await gone;
    clearTimeout(timer);
  }

  private nextLine(timeoutMs: number): Promise<string> {
    const ready = this.lines.shift();
    if (ready !== undefined) return Promise.resolve(ready);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the child server said nothing within ${timeoutMs} ms; stderr: ${this.stderr.slice(-2000)}`)), timeoutMs);
      this.waiters.push((line) => {
        clearTimeout(timer);
        resolve(line);
      });
    });
  }
}
