import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DockerFixture } from '../support/docker.js';
import { parseResultRecord } from '../support/result-record-schema.js';
import { ServerFixture } from '../support/server-fixture.js';

/** curl as a person types it: the bytes it printed, its exit code, and when each line came. */
function curl(args: string[]): { done: Promise<{ code: number | null; stdout: string; stderr: string }>; lines: { at: number; text: string }[]; kill: () => void } {
  const started = Date.now();
  const child = spawn('curl', ['-sS', ...args]);
  const lines: { at: number; text: string }[] = [];
  let stdout = '';
  let stderr = '';
  let partial = '';
  child.stdout.on('data', (d: Buffer) => {
    stdout += d.toString();
    partial += d.toString();
    const parts = partial.split('\n');
    partial = parts.pop() ?? '';
    for (const text of parts) lines.push({ at: Date.now() - started, text });
  });
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return {
    done: new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr }))),
    lines,
    kill: () => child.kill('SIGKILL'),
  };
}

/**
 * Calls over plain HTTP (spec §5.6) from clients nobody here wrote: curl, and
 * Node's own fetch. The conformance scenarios (spec/conformance/scenarios/http.json)
 * pin every status; these pin what a person at a shell sees.
 */
describe('HTTP calls from curl and fetch', () => {
  const docker = new DockerFixture();
  const fx = new ServerFixture();
  let base = '';
  let c = '';
  beforeAll(async () => {
    await fx.start({ docker: docker.engine, webTransportPort: false });
    base = fx.server.wsUrl.replace('ws://', 'http://').replace(/\/callwire$/, '');
    c = await docker.container();
  });
  afterAll(async () => {
    await fx.stop();
    await docker.cleanup();
  });

  it('curl -N shows exec output as it happens, then the terminal frame and the envelope; the exit code in the trailer', async () => {
    const run = curl(['-N', '--raw', '-i', '-X', 'POST', `${base}/call/docker/container/exec`, '-H', 'content-type: application/json', '-d', JSON.stringify({ containerId: c, cmd: ['sh', '-c', 'echo first; sleep 1; echo second; exit 7'] })]);
    const { code, stdout } = await run.done;
    expect(code).toBe(0);
    const first = run.lines.find((l) => l.text.includes('"first\\n"'))!;
    const second = run.lines.find((l) => l.text.includes('"second\\n"'))!;
    // The first line was on screen a second before the command ended: streamed, not buffered.
    expect(second.at - first.at).toBeGreaterThan(700);
    const body = stdout.split('\r\n\r\n').slice(1).join('\r\n\r\n');
    const records = body.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(records.slice(0, 3)).toEqual([
      { stream: 'stdout', text: 'first\n' },
      { stream: 'stdout', text: 'second\n' },
      { exitCode: 7, terminal: true, stdoutBytes: 13, stderrBytes: 0 },
    ]);
    const envelope = parseResultRecord(JSON.stringify(records[3]));
    expect(envelope).toMatchObject({ command: 'exec', outcome: 'operation_failure', exit_code: 7, exec: { exit_code: 7, stdout_bytes: 13 } });
    expect(stdout).toMatch(/\r\nX-Callwire-Exit-Code: 7\r\n/i);
  });

  it('curl with Accept: text/event-stream gets Server-Sent Events', async () => {
    const { stdout } = await curl(['-N', '-X', 'POST', `${base}/call/docker/container/exec`, '-H', 'accept: text/event-stream', '-H', 'content-type: application/json', '-d', JSON.stringify({ containerId: c, cmd: ['echo', 'hi'] })]).done;
    const events = stdout.split('\n\n').filter(Boolean);
    expect(events[0]).toBe('data: {"stream":"stdout","text":"hi\\n"}');
    expect(events[1]).toBe('data: {"exitCode":0,"terminal":true,"stdoutBytes":3,"stderrBytes":0}');
    expect(events[2]).toMatch(/^event: terminal\ndata: \{"kind":"callwire.terminal"/);
    expect(parseResultRecord(events[2]!.split('data: ')[1]!)).toMatchObject({ outcome: 'success', exit_code: 0 });
  });

  it('curl killed mid-exec: the process in the container is killed', async () => {
    const run = curl(['-N', '-X', 'POST', `${base}/call/docker/container/exec`, '-H', 'content-type: application/json', '-d', JSON.stringify({ containerId: c, cmd: ['sh', '-c', 'echo started; exec sleep 1002'] })]);
    await expect.poll(() => run.lines.length, { timeout: 10_000 }).toBeGreaterThan(0);
    // `echo started` comes before the shell execs sleep: wait for it.
    await expect.poll(() => docker.processes(c)).toContain('sleep 1002');
    run.kill();
    await expect.poll(() => docker.processes(c), { timeout: 5000 }).toEqual(['sleep 1000000']);
  });

  it('a reader that stops reading slows the command down; every byte arrives once it reads again', async () => {
    // 64 MiB through a client that reads nothing for 2 s: the command is held at the pipe, not buffered at the server.
    const response = await fetch(`${base}/call/docker/container/exec`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ containerId: c, cmd: ['sh', '-c', 'head -c 67108864 /dev/zero | tr "\\0" a; echo; echo done >&2'], encoding: 'utf8' }),
    });
    expect(response.status).toBe(200);
    const rssBefore = process.memoryUsage().rss;
    await new Promise((resolve) => setTimeout(resolve, 2000));
    // The command is still running: it could not write faster than we read.
    expect((await docker.processes(c)).filter((p) => p !== 'sleep 1000000').length).toBeGreaterThan(0);
    const grown = process.memoryUsage().rss - rssBefore;
    let text = 0;
    let last = '';
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
    let pending = '';
    for (let step = await reader.read(); !step.done; step = await reader.read()) {
      pending += step.value;
      const lines = pending.split('\n');
      pending = lines.pop()!;
      for (const line of lines) {
        const record = JSON.parse(line) as { text?: string };
        if (record.text !== undefined) text += record.text.length;
        last = line;
      }
    }
    expect(text).toBe(67108864 + 1 + 'done\n'.length);
    expect(JSON.parse(last)).toMatchObject({ kind: 'callwire.terminal', outcome: 'success', exec: { stdout_bytes: 67108865, stderr_bytes: 5 } });
    // Server and client share this process: what the pause cost stayed far below the 64 MiB in flight.
    expect(grown).toBeLessThan(48 * 1024 * 1024);
  }, 60_000);

  it('fetch: a unary call answers the envelope with its output; a refusal keeps its status and says why', async () => {
    const ok = await fetch(`${base}/call/docker/container/inspect`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ containerId: c }) });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('x-callwire-exit-code')).toBe('0');
    const envelope = parseResultRecord(await ok.text());
    expect(envelope).toMatchObject({ outcome: 'success', output: { Id: expect.stringMatching(/^[0-9a-f]{64}$/) } });

    const missing = await fetch(`${base}/call/docker/container/inspect`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ containerId: 'no-such-container' }) });
    expect(missing.status).toBe(200);
    expect(parseResultRecord(await missing.text())).toMatchObject({ outcome: 'operation_failure', exit_code: 1, error: { code: 'CONTAINER_NOT_FOUND' } });

    const wrongType = await fetch(`${base}/call/services/list`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'x' });
    expect(wrongType.status).toBe(415);
    expect(parseResultRecord(await wrongType.text())).toMatchObject({ outcome: 'invalid_input', call_id: null });
  });
});
