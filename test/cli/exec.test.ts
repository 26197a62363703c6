import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DockerFixture, dockerHost } from '../support/docker.js';
import { spawn } from 'node:child_process';
import { cliPath, runCli } from '../support/cli.js';
import { parseResultRecord } from '../support/result-record-schema.js';
import { ServerFixture } from '../support/server-fixture.js';

describe('callwire exec: docker exec from anywhere', () => {
  const docker = new DockerFixture();
  const fx = new ServerFixture();
  let url = '';
  let c = '';
  beforeAll(async () => {
    await fx.start({ docker: docker.engine, webTransportPort: false });
    url = fx.server.wsUrl;
    c = await docker.container();
  });
  afterAll(async () => {
    await fx.stop();
    await docker.cleanup();
  });

  it("writes out to stdout, err to stderr, and exits with the remote code 3", async () => {
    const run = runCli(['--url', url, 'exec', c, '--', 'sh', '-c', 'echo out; echo err >&2; exit 3'], { stdin: 'ignore' });
    expect(await run.exited).toEqual({ code: 3, signal: null });
    expect(run.stdout).toBe('out\n');
    expect(run.stderr).toBe('err\n');
  });

  it("printf 'abc' | callwire exec -i c -- wc -c prints 3", async () => {
    const run = runCli(['--url', url, 'exec', '-i', c, '--', 'wc', '-c']);
    run.child.stdin.end('abc');
    expect((await run.exited).code).toBe(0);
    expect(run.stdout.trim()).toBe('3');
  });

  it('yes | head -c 100000000 | callwire exec -i c -- wc -c prints 100000000: stdin streamed, far past maxInputBytes', async () => {
    // A real shell pipeline, and asynchronously: the server runs in this process.
    const child = spawn('bash', ['-c', `yes | head -c 100000000 | '${process.execPath}' '${cliPath}' --url ${url} exec -i ${c} -- wc -c`]);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout.trim()).toBe('100000000');
  }, 130_000);

  it('without -i stdin is never read: an inherited pipe that stays open does not hold the run (sleep 8 | callwire exec …)', async () => {
    const started = Date.now();
    const run = runCli(['--url', url, 'exec', c, '--', 'sh', '-c', 'echo ran; wc -c']); // stdin: a pipe we never close
    run.child.stdin.write('never sent');
    expect((await run.exited).code).toBe(0);
    // The command's own stdin was empty, and the run did not wait for ours to end.
    expect(run.stdout).toBe('ran\n0\n');
    expect(Date.now() - started).toBeLessThan(8000);
    run.child.stdin.destroy();
  });

  it('passes bytes through unchanged (binary output), with --env, --workdir and --user', async () => {
    const bin = runCli(['--url', url, 'exec', c, '--', 'head', '-c', '4096', '/bin/busybox'], { stdin: 'ignore' });
    const chunks: Buffer[] = [];
    bin.child.stdout.on('data', (d: Buffer) => chunks.push(d));
    expect((await bin.exited).code).toBe(0);
    const { readFileSync } = await import('node:fs');
    expect(Buffer.concat(chunks).equals(readFileSync('/bin/busybox').subarray(0, 4096))).toBe(true);
    const opts = runCli(['--url', url, 'exec', '-e', 'A=1', '--env', 'B=two', '-w', '/tmp', '-u', 'nobody', c, '--', 'sh', '-c', 'echo $A $B $(pwd) $(id -u)'], { stdin: 'ignore' });
    expect((await opts.exited).code).toBe(0);
    expect(opts.stdout).toBe('1 two /tmp 65534\n');
  });

  it('as docker exec, everything after the container is the command, flags of ours included: exec c ls -l, exec c sh -c … -w -e -i', async () => {
    const ls = runCli(['--url', url, 'exec', c, 'ls', '-l', '/bin/busybox'], { stdin: 'ignore' });
    expect(await ls.exited).toEqual({ code: 0, signal: null });
    expect(ls.stdout).toMatch(/^-r[-w]x.* \/bin\/busybox\n$/);
    const own = runCli(['--url', url, 'exec', '-e', 'A=1', '-u', 'nobody', c, 'sh', '-c', 'echo $A $(id -u) "$@"', 'sh', '-w', '/', '-e', 'B=2', '-i'], { stdin: 'ignore' });
    expect(await own.exited).toEqual({ code: 0, signal: null });
    expect(own.stdout).toBe('1 65534 -w / -e B=2 -i\n');
  });

  it('--json: one envelope, the remote exit code, captured output', async () => {
    const run = runCli(['--url', url, '--json', 'exec', c, '--', 'sh', '-c', 'printf hi; printf oops >&2; exit 2'], { stdin: 'ignore' });
    expect((await run.exited).code).toBe(2);
    expect(parseResultRecord(run.stdout)).toMatchObject({
      command: 'exec',
      outcome: 'operation_failure',
      exit_code: 2,
      exec: { exit_code: 2, stdout: 'hi', stderr: 'oops', stdout_bytes: 2, stderr_bytes: 4, encoding: 'utf8' },
    });
    const ok = runCli(['--url', url, '--json', 'exec', '--binary', c, '--', 'printf', 'ok'], { stdin: 'ignore' });
    expect((await ok.exited).code).toBe(0);
    expect(parseResultRecord(ok.stdout)).toMatchObject({ outcome: 'success', exit_code: 0, exec: { stdout: Buffer.from('ok').toString('base64'), encoding: 'base64' } });
  });

  it('its own failures use its own codes: unknown container 125, bad flag 121, no server 123, timeout 124', async () => {
    const missing = runCli(['--url', url, 'exec', 'no-such-container', '--', 'true'], { stdin: 'ignore' });
    expect((await missing.exited).code).toBe(125);
    expect(missing.stderr).toMatch(/^Error: no such container: no-such-container \(CONTAINER_NOT_FOUND\)$/m);
    const flag = runCli(['--url', url, 'exec', '--env', 'NOEQUALS', c, '--', 'true'], { stdin: 'ignore' });
    expect((await flag.exited).code).toBe(121);
    const down = runCli(['--url', 'ws://127.0.0.1:1/callwire', 'exec', c, '--', 'true'], { stdin: 'ignore' });
    expect((await down.exited).code).toBe(123);
    const slow = runCli(['--url', url, '--timeout', '300ms', 'exec', c, '--', 'sleep', '30'], { stdin: 'ignore' });
    expect((await slow.exited).code).toBe(124);
  });

  it('SIGTERM aborts the remote command (it is killed) and exits 130', async () => {
    const run = runCli(['--url', url, 'exec', c, '--', 'sh', '-c', 'echo started; sleep 1000'], { stdin: 'ignore' });
    await run.waitFor(/started/, 'stdout');
    run.child.kill('SIGTERM');
    expect((await run.exited).code).toBe(130);
    await expect.poll(() => docker.processes(c), { timeout: 2000 }).toEqual(['sleep 1000000']);
  });

  it('a server killed mid-exec: the documented infrastructure code 123, never 0 (after trying to resume for its grace)', async () => {
    const server = runCli(['serve', '--port', '0', '--no-webtransport'], { env: { DOCKER_HOST: dockerHost } });
    const serverUrl = (await server.waitFor(/ws:\/\/127\.0\.0\.1:\d+\/callwire/, 'stdout')).trim();
    const run = runCli(['--url', serverUrl, 'exec', '--resume', '1', c, '--', 'sh', '-c', 'echo started; sleep 1000'], { stdin: 'ignore' });
    await run.waitFor(/started/, 'stdout');
    server.child.kill('SIGKILL');
    const { code } = await run.exited;
    expect(code).toBe(123);
    expect(run.stderr).toMatch(/^callwire: connection lost; reconnecting/m);
    expect(run.stderr).toMatch(/^Error: .*could not be resumed.*\(UNAVAILABLE\)$/m);
    // The orphaned exec is the engine's to reap; remove it for the next tests.
    await docker.engine.docker.getContainer(c).restart({ t: 0 });
  });
});
