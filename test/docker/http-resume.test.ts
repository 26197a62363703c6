import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DockerFixture } from '../support/docker.js';
import { parseResultRecord } from '../support/result-record-schema.js';
import { readStream, stdoutOf } from '../support/http-stream.js';
import { ServerFixture } from '../support/server-fixture.js';
import { TcpProxy } from '../support/tcp-proxy.js';

const ALICE = 'alice-token-0123456789';
const BOB = 'bob-token-0123456789ab';
const LINES = 300_000;
/**
 * What the server keeps of what it wrote to a reader (maxReplayBytesPerCall, HTTP-8). Its
 * 1 MiB default does not always cover what a loopback relay holds in flight when it is cut
 * in the middle of a fast stream (the socket buffers of both its sides): a resume then gets
 * 410, as it must. These tests cut a stream on purpose and need the window to cover it.
 */
const WINDOW = 8 * 1024 * 1024;
/** What `seq 1 300000` prints. */
const SEQ_OUTPUT = Array.from({ length: LINES }, (_, i) => `${i + 1}\n`).join('');

/** curl as a person types it, its headers (and trailers) dumped to a file; `onStdout` may kill it. */
function curl(args: string[], onStdout?: (stdout: string, kill: () => void) => void): Promise<{ stdout: string; headers: string; code: number | null }> {
  const dir = mkdtempSync(join(tmpdir(), 'callwire-curl-'));
  const dump = join(dir, 'headers');
  const child = spawn('curl', ['-sS', '-N', '-D', dump, ...args]);
  let stdout = '';
  child.stdout.on('data', (d: Buffer) => {
    stdout += d.toString();
    onStdout?.(stdout, () => child.kill('SIGKILL'));
  });
  return new Promise((resolve) =>
    child.on('close', (code) => {
      const headers = readFileSync(dump, 'utf8');
      rmSync(dir, { recursive: true, force: true });
      resolve({ stdout, headers, code });
    }),
  );
}

function header(dump: string, name: string): string | undefined {
  return new RegExp(`^${name}: (.*?)\\r?$`, 'im').exec(dump)?.[1];
}

/**
 * A real exec over plain HTTP whose connection is cut in its middle (spec §5.6,
 * HTTP-6 … HTTP-10): a new request takes it up, and the reader has the command's
 * exact output once and its own exit code; refused tries leave the command alone.
 */
describe('plain HTTP: an exec resumed after its connection is cut', () => {
  const docker = new DockerFixture();
  const fx = new ServerFixture();
  let base = '';
  let proxy: TcpProxy;
  let c = '';
  beforeAll(async () => {
    await fx.start({
      docker: docker.engine,
      webTransportPort: false,
      tokens: [
        { token: ALICE, subject: 'alice', scopes: ['*'] },
        { token: BOB, subject: 'bob', scopes: ['*'] },
      ],
      limits: { maxReplayBytesPerCall: WINDOW },
    });
    base = fx.server.wsUrl.replace('ws://', 'http://').replace(/\/callwire$/, '');
    proxy = await new TcpProxy().start(Number(new URL(base).port));
    c = await docker.container();
  });
  afterAll(async () => {
    await proxy.stop();
    await fx.stop();
    await docker.cleanup();
  });
  const via = (path: string): string => `${proxy.via(base).replace(/\/$/, '')}${path}`;
  const exec = (cmd: string): string => JSON.stringify({ containerId: c, cmd: ['sh', '-c', cmd] });

  it('SSE: 300,000 lines cut in the middle; Last-Event-ID gives the rest once, the exit code is the command\'s; another identity is refused', async () => {
    let received = 0;
    const first = await readStream(via('/call/docker/container/exec'), { headers: { authorization: `Bearer ${ALICE}`, accept: 'text/event-stream', 'x-callwire-resume-ms': '20000' }, body: exec(`seq 1 ${LINES}; exit 3`) }, (records) => {
      received += records.at(-1)!.data.length;
      if (received < 600_000) return false;
      proxy.cut();
      return true;
    });
    expect(first.complete).toBe(false);
    const lastEventId = first.records.at(-1)!.id!;
    // Bob holds Alice's event id (and so her token): refused as an unknown token is, and the command runs on.
    const bob = await fetch(`${base}/call/docker/container/exec`, { method: 'POST', headers: { authorization: `Bearer ${BOB}`, 'last-event-id': lastEventId } });
    expect(bob.status).toBe(404);
    expect(parseResultRecord(await bob.text())).toMatchObject({ command: 'exec', outcome: 'infrastructure_failure', exit_code: 123, call_id: null });

    const rest = await readStream(`${base}/call/docker/container/exec`, { headers: { authorization: `Bearer ${ALICE}`, accept: 'text/event-stream', 'last-event-id': lastEventId } });
    expect(rest.status).toBe(200);
    expect(rest.complete).toBe(true);
    const records = [...first.records, ...rest.records];
    expect(stdoutOf(records) === SEQ_OUTPUT).toBe(true);
    expect(JSON.parse(records.at(-2)!.data)).toEqual({ exitCode: 3, terminal: true, stdoutBytes: SEQ_OUTPUT.length, stderrBytes: 0 });
    expect(parseResultRecord(records.at(-1)!.data)).toMatchObject({ command: 'exec', outcome: 'operation_failure', exit_code: 3, exec: { exit_code: 3, stdout_bytes: SEQ_OUTPUT.length } });
    expect(rest.headers['x-callwire-exit-code']).toBe('3');
    expect(await docker.processes(c)).toEqual(['sleep 1000000']);
    // The reader has it all: the id of the terminal event lets the call go at once.
    const release = await fetch(`${base}/call/docker/container/exec`, { method: 'POST', headers: { authorization: `Bearer ${ALICE}`, 'last-event-id': records.at(-1)!.id! } });
    expect(release.status).toBe(204);
  }, 60_000);

  it('NDJSON with curl: X-Callwire-Resume and X-Callwire-Resume-After (lines received) give the rest once, and the exit code', async () => {
    const first = await curl([via('/call/docker/container/exec'), '-H', `authorization: Bearer ${ALICE}`, '-H', 'content-type: application/json', '-H', 'x-callwire-resume-ms: 20000', '-d', exec(`seq 1 ${LINES} >&2; seq 1 ${LINES}; exit 7`)], (stdout) => {
      if (stdout.length > 900_000) proxy.cut();
    });
    expect(first.code).not.toBe(0);
    const token = header(first.headers, 'x-callwire-resume-token')!;
    const lines = first.stdout.split('\n').slice(0, -1); // the last, cut in its middle, is not one
    const rest = await curl([`${base}/call/docker/container/exec`, '-X', 'POST', '-H', `authorization: Bearer ${ALICE}`, '-H', `x-callwire-resume: ${token}`, '-H', `x-callwire-resume-after: ${lines.length}`]);
    expect(rest.code).toBe(0);
    const records = [...lines, ...rest.stdout.split('\n').filter(Boolean)].map((data) => ({ data }));
    let stderr = '';
    for (const r of records) {
      const item = JSON.parse(r.data) as { stream?: string; text?: string };
      if (item.stream === 'stderr') stderr += item.text;
    }
    expect(stderr === SEQ_OUTPUT).toBe(true);
    expect(stdoutOf(records) === SEQ_OUTPUT).toBe(true);
    expect(parseResultRecord(records.at(-1)!.data)).toMatchObject({ command: 'exec', outcome: 'operation_failure', exit_code: 7 });
    expect(header(rest.headers, 'x-callwire-exit-code')).toBe('7');
    const release = await fetch(`${base}/call/docker/container/exec`, { method: 'POST', headers: { authorization: `Bearer ${ALICE}`, 'x-callwire-resume': token, 'x-callwire-resume-after': 'end' } });
    expect(release.status).toBe(204);
  }, 60_000);

  it('a resume after the grace: the command was killed when the grace ended, and the resume is refused (404, exit code 123)', async () => {
    const first = await readStream(via('/call/docker/container/exec'), { headers: { authorization: `Bearer ${ALICE}`, 'x-callwire-resume-ms': '1000' }, body: exec('echo started; exec sleep 1003') }, () => {
      proxy.cut();
      return true;
    });
    expect(await docker.processes(c)).toContain('sleep 1003');
    await expect.poll(() => docker.processes(c), { timeout: 10_000 }).toEqual(['sleep 1000000']);
    const late = await fetch(`${base}/call/docker/container/exec`, { method: 'POST', headers: { authorization: `Bearer ${ALICE}`, 'x-callwire-resume': first.headers['x-callwire-resume-token']!, 'x-callwire-resume-after': '1' } });
    expect(late.status).toBe(404);
    expect(parseResultRecord(await late.text())).toMatchObject({ command: 'exec', outcome: 'infrastructure_failure', exit_code: 123, diagnostics: [{ code: 'NOT_FOUND' }] });
  }, 30_000);

  it('a resume for output no longer kept: 410, exit code 123, and the command is killed (never a gap)', async () => {
    // The server keeps what it wrote last, up to WINDOW: a reader that has been given three
    // times as much since cannot have the first line again.
    let received = 0;
    let kept = 0;
    const before = fx.server.resumable.budget.bytes;
    const first = await readStream(via('/call/docker/container/exec'), { headers: { authorization: `Bearer ${ALICE}`, 'x-callwire-resume-ms': '20000' }, body: exec('exec yes callwire') }, (records) => {
      received += records.at(-1)!.data.length;
      if (received < 3 * WINDOW) return false;
      // A producer that never stops, and what is kept stays within the window (and one chunk).
      kept = fx.server.resumable.budget.bytes - before;
      proxy.cut();
      return true;
    });
    expect(kept).toBeGreaterThan(WINDOW / 2);
    expect(kept).toBeLessThanOrEqual(WINDOW + 256 * 1024);
    expect(await docker.processes(c)).toContainEqual(expect.stringContaining('yes callwire'));
    const gone = await fetch(`${base}/call/docker/container/exec`, { method: 'POST', headers: { authorization: `Bearer ${ALICE}`, 'x-callwire-resume': first.headers['x-callwire-resume-token']!, 'x-callwire-resume-after': '1' } });
    expect(gone.status).toBe(410);
    expect(parseResultRecord(await gone.text())).toMatchObject({ command: 'exec', outcome: 'infrastructure_failure', exit_code: 123, diagnostics: [{ code: 'UNAVAILABLE', message: expect.stringMatching(/no longer kept/) }] });
    await expect.poll(() => docker.processes(c), { timeout: 10_000 }).toEqual(['sleep 1000000']);
  }, 30_000);
});
