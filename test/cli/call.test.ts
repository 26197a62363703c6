import { rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import { parseResultRecord } from '../support/result-record-schema.js';
import { ServerFixture } from '../support/server-fixture.js';
import { until } from '../support/wait.js';

const TOKEN = 'canary-call-token-7d1f0e2a9b';

describe('callwire call: one outcome per run, exit code and envelope agree', () => {
  const fx = new ServerFixture();
  const locked = new ServerFixture();
  let url = '';
  beforeAll(async () => {
    await fx.start({ webTransportPort: false });
    await locked.start({ webTransportPort: false, tokens: [{ token: TOKEN, subject: 'ci', scopes: ['secret:read', 'secret:write'] }] });
    url = fx.server.wsUrl;
  });
  afterAll(async () => {
    await fx.stop();
    await locked.stop();
  });

  async function call(args: string[], env: NodeJS.ProcessEnv = {}) {
    const run = runCli(['--url', url, ...args], { env, stdin: 'ignore' });
    const { code } = await run.exited;
    return { code, stdout: run.stdout, stderr: run.stderr };
  }

  it('success: output JSON on stdout, exit 0; --json: a valid envelope with the output', async () => {
    const plain = await call(['call', 'test/echo', '--input', '{"text":"hi"}']);
    expect(plain).toEqual({ code: 0, stdout: '{"text":"hi"}\n', stderr: '' });
    const json = await call(['--json', 'call', 'test/echo', '--input', '{"text":"hi"}']);
    expect(json.code).toBe(0);
    expect(parseResultRecord(json.stdout)).toMatchObject({ outcome: 'success', exit_code: 0, failure_boundary: 'none', output: { text: 'hi' }, events_seen: 1 });
  });

  it('--transport must fit the URL: h3 or h2 with a ws:// URL, or ws with an https:// one, is bad input (exit 6) that says so', async () => {
    const h3 = await call(['--transport', 'h3', 'call', 'test/echo', '--input', '{"text":"hi"}']);
    expect(h3.code).toBe(6);
    expect(h3.stderr).toMatch(/--transport h3 needs an https:\/\/ URL, not ws:\/\//);
    const ws = await call(['--url', 'https://127.0.0.1:1/callwire', '--transport', 'ws', 'call', 'test/echo']);
    expect(ws.code).toBe(6);
    expect(ws.stderr).toMatch(/--transport ws needs a ws:\/\/, wss:\/\/ or ws\+unix:\/\/ URL/);
    expect((await call(['--transport', 'ws', 'call', 'test/echo', '--input', '{"text":"hi"}'])).stdout).toBe('{"text":"hi"}\n');
  });

  it('input from @file and from stdin', async () => {
    const file = join(tmpdir(), `callwire-input-${process.pid}.json`);
    writeFileSync(file, '{"text":"from file"}');
    try {
      expect((await call(['call', 'test/echo', '--input', `@${file}`])).stdout).toBe('{"text":"from file"}\n');
    } finally {
      rmSync(file, { force: true });
    }
    const run = runCli(['--url', url, 'call', 'test/echo']);
    run.child.stdin.end('{"text":"from stdin"}');
    expect((await run.exited).code).toBe(0);
    expect(run.stdout).toBe('{"text":"from stdin"}\n');
  });

  it('operation_failure: a declared error, exit 1', async () => {
    const r = await call(['call', 'test/fail', '--input', '{"mode":"declared"}']);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe('Error: widget w1 is missing (WIDGET_MISSING)\n');
    const json = await call(['--json', 'call', 'test/fail', '--input', '{"mode":"declared"}']);
    expect(parseResultRecord(json.stdout)).toMatchObject({ outcome: 'operation_failure', exit_code: 1, failure_boundary: 'execution', error: { code: 'WIDGET_MISSING' } });
    expect(json.code).toBe(1);
  });

  it('infrastructure_failure: INTERNAL from the server, exit 2; and a server that is not there, exit 2', async () => {
    const r = await call(['--json', 'call', 'test/fail', '--input', '{"mode":"plain"}']);
    expect(r.code).toBe(2);
    expect(parseResultRecord(r.stdout)).toMatchObject({ outcome: 'infrastructure_failure', exit_code: 2, error: { code: 'INTERNAL' } });
    const down = runCli(['--url', 'ws://127.0.0.1:1/callwire', '--json', 'call', 'test/echo', '--input', 'null'], { stdin: 'ignore' });
    expect((await down.exited).code).toBe(2);
    expect(parseResultRecord(down.stdout)).toMatchObject({ outcome: 'infrastructure_failure', failure_boundary: 'connect', call_id: null, events_seen: 0 });
  });

  it('cancelled: SIGTERM during a call aborts it on the server, exit 3', async () => {
    const run = runCli(['--url', url, '--json', 'call', 'test/sleep', '--input', '{"ms":60000}'], { stdin: 'ignore' });
    await until(() => fx.liveCalls() === 1, 'call live on the server');
    run.child.kill('SIGTERM');
    expect((await run.exited).code).toBe(3);
    expect(parseResultRecord(run.stdout)).toMatchObject({ outcome: 'cancelled', exit_code: 3 });
    await until(() => fx.liveCalls() === 0, 'server-side call gone');
  });

  it('timeout: --timeout passes to the server as a deadline, exit 4', async () => {
    const r = await call(['--json', '--timeout', '200ms', 'call', 'test/sleep', '--input', '{"ms":60000}']);
    expect(r.code).toBe(4);
    expect(parseResultRecord(r.stdout)).toMatchObject({ outcome: 'timeout', exit_code: 4, error: { code: 'TIMEOUT', retryable: true } });
  });

  it('unsupported: unknown operation, and a subscription called as unary, exit 5', async () => {
    const r = await call(['call', 'no/such-op']);
    expect(r).toMatchObject({ code: 5, stdout: '' });
    expect(r.stderr).toMatch(/^Error: unknown operation: no\/such-op \(NOT_FOUND\)$/m);
    const s = await call(['--json', 'call', 'test/ticker', '--input', '{"count":1}']);
    expect(parseResultRecord(s.stdout)).toMatchObject({ outcome: 'unsupported', exit_code: 5, error: { code: 'INVALID_OPERATION_TYPE' } });
  });

  it('invalid_input: bad JSON (no call made), server INVALID_INPUT, bad flag; exit 6', async () => {
    const bad = await call(['--json', 'call', 'test/echo', '--input', '{nope']);
    expect(bad.code).toBe(6);
    expect(parseResultRecord(bad.stdout)).toMatchObject({ outcome: 'invalid_input', failure_boundary: 'input', call_id: null, events_seen: 0 });
    const server = await call(['call', 'test/echo', '--input', '{"text":5}']);
    expect(server.code).toBe(6);
    expect(server.stderr).toMatch(/^Error: input\.text: .*\(INVALID_INPUT\)$/m);
    const flag = await call(['call', 'test/echo', '--no-such-flag']);
    expect(flag.code).toBe(6);
    expect(flag.stderr).toMatch(/^Error: unknown option '--no-such-flag'/m);
    const flagJson = await call(['--json', 'call', 'test/echo', '--no-such-flag']);
    expect(parseResultRecord(flagJson.stdout)).toMatchObject({ outcome: 'invalid_input', exit_code: 6, failure_boundary: 'input' });
  });

  it('forbidden: no token on a server with tokens, exit 7; with the token (flag or env), success', async () => {
    const lockedUrl = locked.server.wsUrl;
    const denied = runCli(['--url', lockedUrl, '--json', 'call', 'test/secret', '--input', 'null'], { stdin: 'ignore' });
    expect((await denied.exited).code).toBe(7);
    expect(parseResultRecord(denied.stdout)).toMatchObject({ outcome: 'forbidden', exit_code: 7, error: { message: 'authentication required' } });
    const byFlag = runCli(['--url', lockedUrl, '--token', TOKEN, 'call', 'test/secret', '--input', 'null'], { stdin: 'ignore' });
    expect(await byFlag.exited).toMatchObject({ code: 0 });
    const byEnv = runCli(['--url', lockedUrl, 'call', 'test/secret', '--input', 'null'], { stdin: 'ignore', env: { CALLWIRE_TOKEN: TOKEN } });
    expect(await byEnv.exited).toMatchObject({ code: 0 });
    const wrong = runCli(['--url', lockedUrl, '--token', `${TOKEN}-wrong`, 'call', 'test/secret', '--input', 'null'], { stdin: 'ignore' });
    expect((await wrong.exited).code).toBe(7); // refused at the upgrade (HTTP 401): forbidden, not a transport failure
    for (const r of [denied, byFlag, byEnv, wrong]) expect(r.stdout + r.stderr).not.toContain(TOKEN);
  });

  it('--retries retries only retryable errors, and never a non-retryable one', async () => {
    const nonRetryable = await call(['--json', 'call', 'test/fail', '--retries', '2', '--input', '{"mode":"declared"}']);
    expect(parseResultRecord(nonRetryable.stdout)).toMatchObject({ outcome: 'operation_failure', events_seen: 1 });
    // TIMEOUT is retryable: one attempt and two more, one after another.
    const retryable = await call(['--json', '--timeout', '50ms', 'call', 'test/sleep', '--retries', '5', '--input', '{"ms":60000}']);
    expect(parseResultRecord(retryable.stdout)).toMatchObject({ outcome: 'timeout', exit_code: 4, events_seen: 3 });
  });

  it('--retries retries only idempotent operations: a mutation that timed out may have run, so it is tried once (spec §6.1)', async () => {
    const started = fx.probe.started;
    const mutation = await call(['--json', '--timeout', '50ms', 'call', 'test/slow-mutation', '--retries', '2', '--input', '{"ms":60000}']);
    expect(parseResultRecord(mutation.stdout)).toMatchObject({ outcome: 'timeout', exit_code: 4, events_seen: 1 });
    expect(fx.probe.started - started).toBe(1);
  });
});
