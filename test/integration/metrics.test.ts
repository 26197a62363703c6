import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { connect, type Client } from '../../src/client-node/index.js';
import { createMetrics, METRICS_SCOPE, Registry, serveMetrics, startServer, type MetricsListener, type RunningServer } from '../../src/server/index.js';
import { runCli, type CliRun } from '../support/cli.js';
import { parseMetrics, sample } from '../support/prometheus.js';

/** What the server does after the caller has its answer (a cancellation, a line written): bounded waits. */
const POLL = { timeout: 5000, interval: 20 };
const SERVER = { port: 0, webTransportPort: false, docker: false, http3: false, conformance: true } as const;

/** `GET url` by node:http, so the test sets any Host and Origin it likes; the whole answer. */
function get(url: string, headers: Record<string, string> = {}, method = 'GET'): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

const metricsUrl = (server: RunningServer): string => server.wsUrl.replace(/^ws/, 'http').replace('/callwire', '/metrics');

async function scrape(server: RunningServer, headers: Record<string, string> = {}): Promise<Map<string, number>> {
  const answer = await get(metricsUrl(server), headers);
  expect(answer.status, answer.body).toBe(200);
  return parseMetrics(answer.body);
}

const calls = (samples: Map<string, number>, operation: string, outcome: string): number => sample(samples, 'callwire_calls_total', { operation, outcome });

describe('GET /metrics on a server (Prometheus text)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'callwire-metrics-'));
  const auditPath = join(dir, 'audit.jsonl');
  let server: RunningServer;
  let client: Client;
  beforeAll(async () => {
    server = await startServer({ ...SERVER, auditPath });
    client = await connect(server.wsUrl);
  });
  afterAll(async () => {
    await client?.close();
    await server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("counts each call by its operation and outcome exactly, and its bytes each way as the audit log counts them", async () => {
    const before = await scrape(server);
    for (let i = 0; i < 3; i++) await client.call('conformance/echo', { value: 'x'.repeat(100) });
    await client.call('/conformance/echo', { value: 1 }); // the leading slash (REQ-3): the same operation
    await expect(client.call('conformance/echo', 42)).rejects.toMatchObject({ code: 'INVALID_INPUT' }); // refused at admission
    for (let i = 0; i < 2; i++) await expect(client.call('conformance/fail', { mode: 'declared' })).rejects.toMatchObject({ code: 'CONFORMANCE_FAILURE' });
    await expect(client.call('conformance/fail', { mode: 'undeclared' })).rejects.toMatchObject({ code: 'INTERNAL' });
    const counted: unknown[] = [];
    for await (const item of client.iterate('conformance/count', { count: 3 })) counted.push(item);
    expect(counted).toHaveLength(3);
    await client.call('conformance/blob', { bytes: 5000 });
    const held = new AbortController();
    const hold = client.iterate('conformance/hold', { tag: `metrics-${Date.now()}` }, { signal: held.signal })[Symbol.asyncIterator]();
    await hold.next();
    held.abort();
    await expect(hold.next()).rejects.toMatchObject({ code: 'CANCELLED' });
    await expect.poll(async () => calls(await scrape(server), 'conformance/hold', 'cancelled') - calls(before, 'conformance/hold', 'cancelled'), POLL).toBe(1);

    const after = await scrape(server);
    const delta = (operation: string, outcome: string): number => calls(after, operation, outcome) - calls(before, operation, outcome);
    expect({
      echo: delta('conformance/echo', 'completed'),
      echoRefused: delta('conformance/echo', 'INVALID_INPUT'),
      failDeclared: delta('conformance/fail', 'CONFORMANCE_FAILURE'),
      failUndeclared: delta('conformance/fail', 'INTERNAL'),
      failCompleted: delta('conformance/fail', 'completed'),
      count: delta('conformance/count', 'completed'),
      blob: delta('conformance/blob', 'completed'),
      hold: delta('conformance/hold', 'cancelled'),
    }).toEqual({ echo: 4, echoRefused: 1, failDeclared: 2, failUndeclared: 1, failCompleted: 0, count: 1, blob: 1, hold: 1 });

    // The audit log sees the same calls through the same observer hooks: its bytes are the metrics' bytes.
    const lines = (): { operation: string; bytes_in: number; bytes_out: number }[] =>
      readFileSync(auditPath, 'utf8').trimEnd().split('\n').filter(Boolean).map((line) => JSON.parse(line) as { operation: string; bytes_in: number; bytes_out: number });
    const ended = [...after.entries()].filter(([key]) => key.startsWith('callwire_calls_total{')).reduce((sum, [, n]) => sum + n, 0);
    await expect.poll(() => lines().length, POLL).toBe(ended);
    const audited = new Map<string, { in: number; out: number }>();
    for (const line of lines()) {
      const operation = server.registry.lookup(line.operation)?.name ?? 'unknown';
      const entry = audited.get(operation) ?? { in: 0, out: 0 };
      audited.set(operation, { in: entry.in + line.bytes_in, out: entry.out + line.bytes_out });
    }
    expect([...audited.keys()].sort()).toEqual(['conformance/blob', 'conformance/count', 'conformance/echo', 'conformance/fail', 'conformance/hold']);
    for (const [operation, bytes] of audited) {
      expect({ operation, in: sample(after, 'callwire_call_bytes_total', { operation, direction: 'in' }), out: sample(after, 'callwire_call_bytes_total', { operation, direction: 'out' }) }).toEqual({ operation, ...bytes });
    }
    expect(sample(after, 'callwire_call_bytes_total', { operation: 'conformance/blob', direction: 'out' })).toBeGreaterThan(5000);
  });

  it("an operation the server does not have is labelled unknown: the caller's string never becomes a label", async () => {
    const name = `no/such/op-${'z'.repeat(20)}-${Date.now()}`;
    const before = await scrape(server);
    await expect(client.call(name, null)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(client.call('conformance/internal', null)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    const text = (await get(metricsUrl(server))).body;
    expect(text).not.toContain('no/such/op');
    const after = parseMetrics(text);
    expect(calls(after, 'unknown', 'NOT_FOUND') - calls(before, 'unknown', 'NOT_FOUND')).toBe(1);
    // An internal operation is one the server has: its name, not the caller's string.
    expect(calls(after, 'conformance/internal', 'NOT_FOUND') - calls(before, 'conformance/internal', 'NOT_FOUND')).toBe(1);
  });

  it('the live calls gauge shows a held call, and drops when it ends; sessions count the open connections', async () => {
    const before = await scrape(server);
    expect(sample(before, 'callwire_live_calls')).toBe(0);
    const second = await connect(server.wsUrl);
    try {
      const held = new AbortController();
      const hold = second.iterate('conformance/hold', { tag: `live-${Date.now()}` }, { signal: held.signal })[Symbol.asyncIterator]();
      await hold.next();
      const during = await scrape(server);
      expect(sample(during, 'callwire_live_calls')).toBe(1);
      expect(sample(during, 'callwire_sessions') - sample(before, 'callwire_sessions')).toBe(1);
      held.abort();
      await expect(hold.next()).rejects.toMatchObject({ code: 'CANCELLED' });
      await expect.poll(async () => sample(await scrape(server), 'callwire_live_calls'), POLL).toBe(0);
    } finally {
      await second.close();
    }
    await expect.poll(async () => sample(await scrape(server), 'callwire_sessions'), POLL).toBe(sample(before, 'callwire_sessions'));
  });

  it("passes Prometheus's own linter (promtool check metrics, from Debian's prometheus package), with calls counted", async () => {
    await client.call('conformance/echo', { value: 'lint' });
    await expect(client.call('conformance/fail', { mode: 'declared' })).rejects.toMatchObject({ code: 'CONFORMANCE_FAILURE' });
    const answer = await get(metricsUrl(server));
    expect(answer.body).toContain('callwire_calls_total');
    const lint = spawnSync('promtool', ['check', 'metrics'], { input: answer.body, encoding: 'utf8' });
    expect(lint.error, 'promtool is missing: apt-get install prometheus (.ci/run installs it)').toBeUndefined();
    expect(`${lint.stdout}${lint.stderr}`).toBe('');
    expect(lint.status).toBe(0);
  });

  it("holds the process's own metrics, and the exposition content type", async () => {
    const answer = await get(metricsUrl(server));
    expect(answer.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
    const samples = parseMetrics(answer.body);
    expect(sample(samples, 'process_resident_memory_bytes')).toBeGreaterThan(0);
    expect([...samples.keys()].some((key) => key.startsWith('nodejs_eventloop_lag_seconds'))).toBe(true);
  });

  it('a page of another origin cannot read it, nor one reached through a foreign Host (DNS rebinding); only GET and HEAD', async () => {
    const own = await get(metricsUrl(server));
    expect(own.status).toBe(200);
    expect(Object.keys(own.headers).filter((h) => h.startsWith('access-control-'))).toEqual([]);
    const foreign = await get(metricsUrl(server), { origin: 'https://evil.example' });
    expect(foreign.status).toBe(403);
    expect(foreign.body).not.toContain('callwire_');
    expect(Object.keys(foreign.headers).filter((h) => h.startsWith('access-control-'))).toEqual([]);
    const rebound = await get(metricsUrl(server), { host: `evil.example:${new URL(server.wsUrl).port}` });
    expect(rebound.status).toBe(403);
    expect((await get(metricsUrl(server), {}, 'POST')).status).toBe(405);
    expect((await get(metricsUrl(server), {}, 'OPTIONS')).status).toBe(405);
  });
});

describe('GET /metrics on a server with tokens', () => {
  const reader = { token: 'metrics-reader-0123456789abcdef', subject: 'prometheus', scopes: [METRICS_SCOPE] };
  const admin = { token: 'admin-token-0123456789abcdef01', subject: 'admin', scopes: ['*'] };
  const caller = { token: 'caller-token-0123456789abcdef0', subject: 'ci', scopes: ['container:*', 'conformance:restricted'] };
  let server: RunningServer;
  beforeAll(async () => {
    server = await startServer({ ...SERVER, tokens: [reader, admin, caller] });
  });
  afterAll(async () => {
    await server?.close();
  });

  it(`needs a token with the scope ${METRICS_SCOPE}: 401 without one or with an unknown one, 403 with one that lacks the scope`, async () => {
    const url = metricsUrl(server);
    const none = await get(url);
    expect(none.status).toBe(401);
    expect(none.headers['www-authenticate']).toMatch(/^Bearer/);
    expect(none.body).not.toContain('callwire_');
    expect((await get(url, { authorization: 'Bearer not-a-token-of-this-server' })).status).toBe(401);
    const lacking = await get(url, { authorization: `Bearer ${caller.token}` });
    expect(lacking.status).toBe(403);
    expect(lacking.headers['www-authenticate']).toContain('insufficient_scope');
    expect(lacking.body).not.toContain('callwire_');
    expect(lacking.body).not.toContain(caller.token);
    expect(sample(await scrape(server, { authorization: `Bearer ${reader.token}` }), 'callwire_live_calls')).toBe(0);
    expect((await get(url, { authorization: `Bearer ${admin.token}` })).status).toBe(200);
  });

  it('a valid token does not let a page of another origin read it, nor one reached through a foreign Host (issue 31: the check ran only without tokens)', async () => {
    const url = metricsUrl(server);
    const auth = { authorization: `Bearer ${reader.token}` };
    expect((await get(url, auth)).status).toBe(200);
    const foreign = await get(url, { ...auth, origin: 'https://evil.example' });
    expect(foreign.status).toBe(403);
    expect(foreign.body).not.toContain('callwire_');
    expect(Object.keys(foreign.headers).filter((h) => h.startsWith('access-control-'))).toEqual([]);
    const rebound = await get(url, { ...auth, host: `evil.example:${new URL(server.wsUrl).port}` });
    expect(rebound.status).toBe(403);
    expect(rebound.body).not.toContain('callwire_');
  });
});

describe('GET /metrics turned off', () => {
  it('metrics: false leaves /metrics unserved, and still counts for code that reads server.metrics', async () => {
    const server = await startServer({ ...SERVER, metrics: false });
    try {
      expect((await get(metricsUrl(server))).status).toBe(404);
      const client = await connect(server.wsUrl);
      await client.call('conformance/echo', { value: 1 });
      await client.close();
      expect(calls(parseMetrics(await server.metrics.metrics()), 'conformance/echo', 'completed')).toBe(1);
    } finally {
      await server.close();
    }
  });
});

describe('serveMetrics: /metrics on a port of its own (an agent)', () => {
  let listener: MetricsListener | undefined;
  afterEach(async () => {
    await listener?.close();
    listener = undefined;
  });

  it("serves a ServerMetrics with the fleet's metrics once set, refuses a foreign Host on loopback, and frees its port on close", async () => {
    const metrics = createMetrics({ operations: new Registry() });
    listener = await serveMetrics(metrics, '127.0.0.1', 0);
    const first = parseMetrics((await get(listener.url)).body);
    expect(sample(first, 'callwire_live_calls')).toBe(0);
    // Created on first use: a server outside a fleet shows neither.
    expect([...first.keys()].some((key) => key.startsWith('callwire_hosts_up') || key.startsWith('callwire_nats_reconnects_total'))).toBe(false);
    const fleet = { hostsUp: 3, natsReconnects: 0 };
    metrics.watchFleet(() => fleet);
    fleet.hostsUp = 2;
    fleet.natsReconnects = 2;
    const second = parseMetrics((await get(listener.url)).body);
    expect({ hostsUp: sample(second, 'callwire_hosts_up'), reconnects: sample(second, 'callwire_nats_reconnects_total') }).toEqual({ hostsUp: 2, reconnects: 2 });
    expect((await get(listener.url.replace('/metrics', '/other'))).status).toBe(404);
    expect((await get(listener.url, { host: `evil.example:${listener.port}` })).status).toBe(403);
    const { port } = listener;
    await listener.close();
    listener = undefined;
    await expect(get(`http://127.0.0.1:${port}/metrics`)).rejects.toMatchObject({ code: 'ECONNREFUSED' });
  });
});

describe('callwire serve and /metrics', () => {
  let run: CliRun | undefined;
  afterEach(async () => {
    run?.child.kill('SIGKILL');
    await run?.exited;
    run = undefined;
  });

  it('the banner names the endpoint, and --no-metrics turns it off', async () => {
    run = runCli(['serve', '--port', '0', '--no-webtransport', '--conformance'], { env: { DOCKER_HOST: 'unix:///nonexistent', CALLWIRE_TOKENS: '', CALLWIRE_TOKENS_FILE: '' }, stdin: 'ignore' });
    const on = await run.waitFor(/metrics +http:\/\/127\.0\.0\.1:\d+\/metrics/, 'stdout', 15_000);
    expect((await get(on.split(/ +/)[1]!)).status).toBe(200);
    run.child.kill('SIGKILL');
    await run.exited;
    run = runCli(['serve', '--port', '0', '--no-webtransport', '--conformance', '--no-metrics'], { env: { DOCKER_HOST: 'unix:///nonexistent', CALLWIRE_TOKENS: '', CALLWIRE_TOKENS_FILE: '' }, stdin: 'ignore' });
    const ws = await run.waitFor(/ws:\/\/127\.0\.0\.1:\d+\/callwire/, 'stdout', 15_000);
    await run.waitFor(/operations /, 'stdout');
    expect(run.stdout).not.toMatch(/metrics +http/);
    expect((await get(ws.replace(/^ws/, 'http').replace('/callwire', '/metrics'))).status).toBe(404);
  });
});
