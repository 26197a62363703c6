import { expect } from 'vitest';
import { connect, type Client } from '../../src/client-node/index.js';
import { runCli, type CliRun } from './cli.js';
import { parseResultRecord } from './result-record-schema.js';

/**
 * The real server as a process of its own (`callwire serve`, WebSocket and HTTP
 * calls on a free port), so a request that kills it shows as its exit, not the
 * test runner's; and a WebSocket client of it.
 */
export class ServedCli {
  run!: CliRun;
  client!: Client;
  wsUrl = '';
  /** `http://127.0.0.1:<port>`: `POST ${base}/call/<operation>`. */
  base = '';

  async start(dockerHost: string): Promise<this> {
    this.run = runCli(['serve', '--port', '0', '--no-webtransport'], { stdin: 'ignore', env: { DOCKER_HOST: dockerHost } });
    this.wsUrl = (await this.run.waitFor(/ws:\/\/127\.0\.0\.1:\d+\/callwire/, 'stdout', 15_000)).trim();
    this.base = this.wsUrl.replace('ws://', 'http://').replace(/\/callwire$/, '');
    this.client = await connect(this.wsUrl);
    return this;
  }

  /** `POST /call/<operation>` with a JSON body: the envelope it answered. */
  async httpCall(operation: string, input: unknown): Promise<Record<string, unknown>> {
    const response = await fetch(`${this.base}/call/${operation}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(input) });
    const lines = (await response.text()).trim().split('\n');
    return parseResultRecord(lines[lines.length - 1]!);
  }

  /** The process still runs and still answers a call over HTTP and over its WebSocket. */
  async expectAlive(): Promise<void> {
    expect(this.run.child.exitCode, `the server exited; stderr: ${this.run.stderr.slice(-2000)}`).toBeNull();
    expect(this.run.child.signalCode).toBeNull();
    expect(await this.httpCall('services/list', null)).toMatchObject({ outcome: 'success' });
    expect((await this.client.listOperations()).length).toBeGreaterThan(0);
  }

  async stop(): Promise<void> {
    await this.client?.close().catch(() => undefined);
    this.run?.child.kill('SIGKILL');
    await this.run?.exited;
  }
}
