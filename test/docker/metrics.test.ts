import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type Client } from '../../src/client-node/index.js';
import { startServer, type RunningServer } from '../../src/server/index.js';
import { DockerFixture } from '../support/docker.js';
import { parseMetrics, sample } from '../support/prometheus.js';

describe('/metrics of a server with the Docker operations', () => {
  const docker = new DockerFixture();
  let server: RunningServer;
  let client: Client;
  let containerId = '';
  const scrape = async (): Promise<Map<string, number>> => {
    const answer = await fetch(server.wsUrl.replace(/^ws/, 'http').replace('/callwire', '/metrics'));
    expect(answer.status).toBe(200);
    return parseMetrics(await answer.text());
  };
  beforeAll(async () => {
    containerId = await docker.container();
    server = await startServer({ port: 0, webTransportPort: false, http3: false, docker: docker.engine });
    expect(server.docker.on).toBe(true);
    client = await connect(server.wsUrl);
  });
  afterAll(async () => {
    await client?.close();
    await server?.close();
    await docker.cleanup();
  });

  it('an aborted exec of `sleep 100` counts one exec kill, no kill failure, and one cancelled exec call', async () => {
    const before = await scrape();
    const aborted = new AbortController();
    const exec = client.iterate('docker/container/exec', { containerId, cmd: ['sleep', '100'] }, { signal: aborted.signal })[Symbol.asyncIterator]();
    const ended = exec.next();
    await expect.poll(async () => (await docker.processes(containerId)).includes('sleep 100'), { timeout: 10_000, interval: 50 }).toBe(true);
    expect(sample(await scrape(), 'callwire_live_calls')).toBe(1);
    aborted.abort();
    await expect(ended).rejects.toMatchObject({ code: 'CANCELLED' });
    await expect.poll(async () => (await docker.processes(containerId)).includes('sleep 100'), { timeout: 5000, interval: 50 }).toBe(false);
    const since = async () => {
      const after = await scrape();
      const delta = (name: string, labels?: Record<string, string>): number => sample(after, name, labels) - sample(before, name, labels);
      return {
        kills: delta('callwire_exec_kills_total'),
        failures: delta('callwire_exec_kill_failures_total'),
        cancelled: delta('callwire_calls_total', { operation: 'docker/container/exec', outcome: 'cancelled' }),
        live: sample(after, 'callwire_live_calls'),
      };
    };
    await expect.poll(since, { timeout: 10_000, interval: 50 }).toEqual({ kills: 1, failures: 0, cancelled: 1, live: 0 });
  });

  it('an exec that runs to its end kills nothing', async () => {
    const before = await scrape();
    const frames: unknown[] = [];
    for await (const frame of client.iterate('docker/container/exec', { containerId, cmd: ['true'] })) frames.push(frame);
    expect(frames.at(-1)).toMatchObject({ exitCode: 0 });
    const after = await scrape();
    expect(sample(after, 'callwire_exec_kills_total')).toBe(sample(before, 'callwire_exec_kills_total'));
    expect(sample(after, 'callwire_calls_total', { operation: 'docker/container/exec', outcome: 'completed' }) - sample(before, 'callwire_calls_total', { operation: 'docker/container/exec', outcome: 'completed' })).toBe(1);
  });

  it("kill failures are the engine's one count, the one services/stats reports", async () => {
    // A kill that fails cannot be made to happen on demand here (exec-kill.test.ts covers the kill itself): the count it would raise is raised directly.
    docker.engine.counters.execKillFailures += 2;
    const stats = await client.call<{ execKillFailures: number }>('services/stats', null);
    expect(stats.execKillFailures).toBeGreaterThanOrEqual(2);
    expect(sample(await scrape(), 'callwire_exec_kill_failures_total')).toBe(stats.execKillFailures);
  });
});
