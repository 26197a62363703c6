import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliPath, runCli } from '../support/cli.js';
import { childPids } from '../support/proc.js';
import { ServerFixture } from '../support/server-fixture.js';
import { sleep, until } from '../support/wait.js';

const EXITED = /^\[callwire\] exited — received (\d+) event\(s\) in [\d.]+s \(reason: (\w+)\)$/;
const TOKEN = 'canary-subscribe-token-3c4d5e6f';

describe('callwire subscribe: the long-running consumer contract', () => {
  const fx = new ServerFixture();
  let url = '';
  beforeAll(async () => {
    await fx.start({ webTransportPort: false, tokens: [{ token: TOKEN, subject: 'consumer', scopes: [] }] });
    url = fx.server.wsUrl;
  });
  afterAll(() => fx.stop());

  const ticker = (count: number, intervalMs = 20) => ['--url', url, 'subscribe', 'test/ticker', '--input', JSON.stringify({ count, intervalMs })];
  const lastStderrLine = (stderr: string): string => stderr.trimEnd().split('\n').at(-1) ?? '';

  it('prints the ready marker on stderr before the first stdout line, then one JSON line per value', async () => {
    const run = runCli([...ticker(1_000_000, 10), '--max-events', '5']);
    const { code } = await run.exited;
    expect(code).toBe(0);
    const ready = run.lines.findIndex((l) => l.stream === 'stderr' && /^\[callwire\] ready op=test\/ticker call_id=[0-9a-f-]{36}$/.test(l.line));
    const firstOut = run.lines.findIndex((l) => l.stream === 'stdout');
    expect(ready).toBeGreaterThanOrEqual(0);
    expect(ready).toBeLessThan(firstOut);
    expect(run.stdout).toBe([0, 1, 2, 3, 4].map((n) => `{"n":${n}}\n`).join(''));
    expect(lastStderrLine(run.stderr)).toMatch(EXITED);
    expect(EXITED.exec(lastStderrLine(run.stderr))!.slice(1)).toEqual(['5', 'limit']);
    await until(() => fx.liveCalls() === 0, 'subscription gone on the server');
  });

  it('--quiet removes the ready marker', async () => {
    const run = runCli(['--quiet', ...ticker(1_000_000, 10), '--max-events', '1']);
    expect((await run.exited).code).toBe(0);
    expect(run.stderr).not.toContain('ready');
    expect(lastStderrLine(run.stderr)).toMatch(EXITED);
  });

  it("printf '' | callwire subscribe …: stdin EOF stops it within 2 s, exit 0, reason stdin", async () => {
    const started = Date.now();
    const run = runCli(ticker(1_000_000, 50));
    run.child.stdin.end();
    const { code } = await run.exited;
    expect(Date.now() - started).toBeLessThan(2000 + 1000); // + node start-up
    expect(code).toBe(0);
    expect(EXITED.exec(lastStderrLine(run.stderr))?.[2]).toBe('stdin');
    await until(() => fx.liveCalls() === 0, 'subscription gone on the server');
  });

  it('with stdin from /dev/null (cron, CI), it is not stopped by that end: it runs to its own, here the stream completing', async () => {
    const run = runCli(['--url', url, 'subscribe', 'test/ticker', '--input', JSON.stringify({ count: 5, intervalMs: 20 })], { stdin: 'null' });
    expect((await run.exited).code).toBe(0);
    expect(EXITED.exec(lastStderrLine(run.stderr))!.slice(1)).toEqual(['5', 'completed']);
    expect(run.stdout.trim().split('\n')).toHaveLength(5);
  });

  it('--ignore-stdin: a pipe closed at once does not stop it either', async () => {
    const run = runCli([...ticker(3, 20), '--ignore-stdin']);
    run.child.stdin.end();
    expect((await run.exited).code).toBe(0);
    expect(EXITED.exec(lastStderrLine(run.stderr))!.slice(1)).toEqual(['3', 'completed']);
  });

  it('fed a stdin that never ends, it is still alive and receiving after 5 s', async () => {
    const run = runCli(ticker(1_000_000, 50));
    await run.waitFor(/ready/, 'stderr');
    await sleep(5000);
    const seen = run.stdout.split('\n').length;
    expect(run.child.exitCode).toBeNull();
    await sleep(300);
    expect(run.stdout.split('\n').length).toBeGreaterThan(seen);
    expect(fx.liveCalls()).toBe(1);
    run.child.kill('SIGTERM');
    await run.exited;
    await until(() => fx.liveCalls() === 0, 'subscription gone on the server');
  }, 20_000);

  it('--max-events 1: reason limit, N=1', async () => {
    const run = runCli([...ticker(1_000_000, 10), '--max-events', '1']);
    expect((await run.exited).code).toBe(0);
    expect(EXITED.exec(lastStderrLine(run.stderr))!.slice(1)).toEqual(['1', 'limit']);
    expect(run.stdout).toBe('{"n":0}\n');
    await until(() => fx.liveCalls() === 0, 'subscription gone on the server');
  });

  it('--duration 2s with no events: reason timeout, N=0', async () => {
    const run = runCli([...ticker(10, 60_000), '--duration', '2s']);
    expect((await run.exited).code).toBe(0);
    expect(EXITED.exec(lastStderrLine(run.stderr))!.slice(1)).toEqual(['0', 'timeout']);
    expect(run.stdout).toBe('');
    await until(() => fx.liveCalls() === 0, 'subscription gone on the server');
  });

  it('SIGTERM: reason signal, exit 0, the server tears the subscription down', async () => {
    const run = runCli(ticker(1_000_000, 20));
    await run.waitFor(/\{"n":2\}/, 'stdout');
    expect(fx.liveCalls()).toBe(1);
    run.child.kill('SIGTERM');
    expect((await run.exited).code).toBe(0);
    expect(EXITED.exec(lastStderrLine(run.stderr))?.[2]).toBe('signal');
    await until(() => fx.liveCalls() === 0, 'subscription gone on the server');
  });

  it('a stream that ends by itself: reason completed', async () => {
    const run = runCli(ticker(3, 5));
    expect((await run.exited).code).toBe(0);
    expect(EXITED.exec(lastStderrLine(run.stderr))!.slice(1)).toEqual(['3', 'completed']);
  });

  it('a bad flag: non-zero, an Error line, no exited line', async () => {
    const run = runCli([...ticker(3), '--max-events', 'lots']);
    const { code } = await run.exited;
    expect(code).not.toBe(0);
    expect(run.stderr).toMatch(/^Error: --max-events must be a whole number/m);
    expect(run.stderr).not.toContain('exited');
    expect(run.stderr).not.toContain('ready');
  });

  it('startup and runtime failures: non-zero, an Error line, no exited line', async () => {
    const unknown = runCli(['--url', url, 'subscribe', 'no/such-op']);
    expect((await unknown.exited).code).toBe(5);
    expect(unknown.stderr).toMatch(/^Error: unknown operation/m);
    const unary = runCli(['--url', url, 'subscribe', 'test/echo']);
    expect((await unary.exited).code).toBe(5);
    const down = runCli(['--url', 'ws://127.0.0.1:1/callwire', 'subscribe', 'test/ticker']);
    expect((await down.exited).code).toBe(2);
    const failing = runCli(['--url', url, 'subscribe', 'test/fail-midstream']);
    expect((await failing.exited).code).toBe(1);
    expect(failing.stdout).toBe('{"n":1}\n{"n":2}\n');
    for (const r of [unknown, unary, down, failing]) {
      expect(r.stderr).toMatch(/^Error: /m);
      expect(r.stderr).not.toContain('exited');
    }
  });

  it('a canary token never appears in output, errors, or any child process', async () => {
    // The probe itself sees children where there are some: our own CLI child is one of ours.
    const run = runCli(['--token', TOKEN, ...ticker(1_000_000, 20)], { env: { CALLWIRE_TOKEN: TOKEN } });
    expect(descendants(process.pid)).toContain(run.child.pid);
    await run.waitFor(/ready/, 'stderr');
    const children = descendants(run.child.pid!);
    for (const pid of children) {
      expect(readFileSync(`/proc/${pid}/cmdline`, 'utf8')).not.toContain(TOKEN);
      expect(readFileSync(`/proc/${pid}/environ`, 'utf8')).not.toContain(TOKEN);
    }
    run.child.kill('SIGTERM');
    await run.exited;
    const failed = runCli(['--token', TOKEN, '--url', 'ws://127.0.0.1:1/callwire', 'subscribe', 'test/ticker']);
    await failed.exited;
    for (const r of [run, failed]) expect(r.stdout + r.stderr).not.toContain(TOKEN);
    expect(children).toEqual([]); // the CLI starts no child processes at all
  });

  it('kill -9 cannot abort: the server notices only when the connection drops (documented in --help)', async () => {
    const help = spawn(process.execPath, [cliPath, 'subscribe', '--help']);
    let text = '';
    help.stdout.on('data', (c: Buffer) => (text += c.toString()));
    await new Promise((resolve) => help.on('exit', resolve));
    expect(text).toMatch(/kill -9/);
  });
});

/** Child processes, recursively. Throws when /proc cannot tell (an empty answer must mean "none"). */
function descendants(pid: number, root = true): number[] {
  const out: number[] = [];
  let children: number[];
  try {
    children = childPids(pid);
  } catch (error) {
    if (root) throw new Error(`cannot list the children of ${pid}: ${String(error)}`);
    return out; // a descendant that exited while we looked
  }
  for (const c of children) out.push(c, ...descendants(c, false));
  return out;
}
