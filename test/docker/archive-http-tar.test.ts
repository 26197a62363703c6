import { spawn } from 'node:child_process';
import { request } from 'node:http';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DOCKER_CLI, dockerCli, DockerFixture, dockerHost } from '../support/docker.js';
import { rssGrowthSampler } from '../support/proc.js';
import { parseResultRecord } from '../support/result-record-schema.js';
import { ServedCli } from '../support/served.js';

const MiB = 1024 * 1024;
/** What the server may grow by while an archive passes through it either way: a few socket and engine buffers and the input window, far below the archive. */
const BOUND = 64 * MiB;

interface Shell {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** A shell pipeline, as a curl user types it, with the test engine and this file's scratch directory. */
function sh(script: string, env: Record<string, string> = {}): Promise<Shell> {
  return new Promise((resolve, reject) => {
    const child = spawn('sh', ['-c', script], { env: { ...process.env, DOCKER_HOST: dockerHost, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** The headers and trailers `curl -D` wrote, by lower-case name (a trailer comes after the headers, so it wins). */
function headersIn(file: string): Record<string, string> {
  const found: Record<string, string> = {};
  for (const line of readFileSync(file, 'utf8').split(/\r?\n/)) {
    const at = line.indexOf(':');
    if (at > 0 && !line.startsWith('HTTP/')) found[line.slice(0, at).trim().toLowerCase()] = line.slice(at + 1).trim();
  }
  return found;
}

function sha256(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/**
 * Archives as raw tar over plain HTTP (spec §12 ARC-8, ARC-9; docs/security.md "Archives"):
 * the real server (`callwire serve`), the real engine, the real curl and tar, as the docs
 * show them.
 */
describe('raw tar over plain HTTP: curl | tar x, curl -T', () => {
  const docker = new DockerFixture();
  const served = new ServedCli();
  const scratch = mkdtempSync(join(tmpdir(), 'httptar-'));
  let c = '';
  /** A put's destination: the engine locks a container while a get reads it. */
  let into = '';
  beforeAll(async () => {
    await served.start(dockerHost);
    c = await docker.container();
    into = await docker.container();
    const made = await dockerCli(['exec', c, 'sh', '-c', 'mkdir -p /data/sub && echo one > /data/a && head -c 300000 /dev/urandom > /data/sub/b && ln -s a /data/link && dd if=/dev/zero of=/big bs=1M count=256 2>/dev/null && dd if=/dev/zero of=/mid bs=1M count=96 2>/dev/null']);
    expect(made.code).toBe(0);
    expect((await dockerCli(['exec', into, 'mkdir', '/in'])).code).toBe(0);
  }, 60_000);
  afterAll(async () => {
    await served.stop();
    await docker.cleanup();
    rmSync(scratch, { recursive: true, force: true });
  });

  const url = (op: string): string => `${served.base}/call/docker/container/archive/${op}`;

  it('get: curl | tar x gives docker cp\'s tree; the trailers carry the count and the sha256 of the very bytes', async () => {
    const dir = join(scratch, 'get');
    const input = JSON.stringify({ containerId: c, path: '/data' });
    const run = await sh(
      `mkdir -p "$D/ours" "$D/theirs" && curl -sN -D "$D/headers" -H 'Accept: application/x-tar' -H 'content-type: application/json' -d '${input}' '${url('get')}' | tee "$D/ours.tar" | tar x -C "$D/ours" && ${DOCKER_CLI} cp ${c}:/data "$D/theirs" && ${DOCKER_CLI} cp ${c}:/data - > "$D/theirs.tar" && diff -r --no-dereference "$D/ours/data" "$D/theirs/data" && readlink "$D/ours/data/link"`,
      { D: dir },
    );
    expect(run.stderr).toBe('');
    expect(run).toMatchObject({ code: 0, stdout: 'a\n' });
    const tar = readFileSync(join(dir, 'ours.tar'));
    expect(tar.equals(readFileSync(join(dir, 'theirs.tar')))).toBe(true);
    const headers = headersIn(join(dir, 'headers'));
    expect(headers['content-type']).toBe('application/x-tar');
    expect(headers['x-callwire-exit-code']).toBe('0');
    expect(headers['x-callwire-archive-bytes']).toBe(String(tar.byteLength));
    expect(headers['x-callwire-archive-sha256']).toBe(sha256(tar));
    expect(headers['x-callwire-error']).toBeUndefined();
  }, 30_000);

  it('get of a missing path: 404 with the PATH_NOT_FOUND result record, not a byte of tar', async () => {
    const run = await sh(`curl -s -o "$D/body" -w '%{http_code} %{content_type}' -H 'Accept: application/x-tar' -H 'content-type: application/json' -d '${JSON.stringify({ containerId: c, path: '/no/such' })}' '${url('get')}'`, { D: scratch });
    expect(run.stdout).toBe('404 application/json; charset=utf-8');
    const record = parseResultRecord(readFileSync(join(scratch, 'body'), 'utf8').trim());
    expect(record).toMatchObject({ outcome: 'operation_failure', error: { code: 'PATH_NOT_FOUND' } });
  }, 30_000);

  it('put: curl -T a tar, its input in the query; the file whole in the container, the terminal frame the tar\'s', async () => {
    const dir = mkdtempSync(join(scratch, 'put-'));
    writeFileSync(join(dir, 'payload.bin'), Buffer.from(Array.from({ length: 3 * MiB }, (_, i) => (i * 7919) % 251)));
    const input = encodeURIComponent(JSON.stringify({ containerId: into, path: '/in' }));
    const run = await sh(`cd "$D" && tar cf payload.tar payload.bin && curl -s -T payload.tar -H 'content-type: application/x-tar' '${url('put')}?input=${input}'`, { D: dir });
    expect(run.code).toBe(0);
    const lines = run.stdout.trim().split('\n');
    const tar = readFileSync(join(dir, 'payload.tar'));
    expect(JSON.parse(lines[0]!)).toEqual({ terminal: true, bytes: tar.byteLength, sha256: sha256(tar) });
    expect(parseResultRecord(lines[1]!)).toMatchObject({ kind: 'callwire.terminal', outcome: 'success', exit_code: 0 });
    const sum = await dockerCli(['exec', into, 'sha256sum', '/in/payload.bin']);
    expect(sum.stdout.toString().split(/\s+/)[0]).toBe(sha256(readFileSync(join(dir, 'payload.bin'))));
  }, 30_000);

  it('refuses raw tar where it does not belong: Accept on another operation 406, a tar body to another operation 415', async () => {
    const accept = await sh(`curl -s -o /dev/null -w '%{http_code}' -H 'Accept: application/x-tar' -H 'content-type: application/json' -d '{}' '${served.base}/call/services/list'`);
    expect(accept.stdout).toBe('406');
    const body = await sh(`curl -s -w ' %{http_code}' -X POST -H 'content-type: application/x-tar' --data-binary 'not json' '${served.base}/call/docker/container/exec?input=%7B%7D'`);
    expect(body.stdout).toMatch(/UNSUPPORTED_MEDIA_TYPE.* 415$/s);
  }, 30_000);

  it('a hostile caller: a body that never ends, sent slowly, ends at the caller\'s deadline (TIMEOUT), the server unharmed', async () => {
    // A tar whose one entry says 64 GiB (a sparse file: GNU tar reads zeros), sent at 4 MB/s.
    const run = await sh(
      `cd "$D" && truncate -s 64G endless && tar cf - endless | curl -s -T - --limit-rate 4M -H 'content-type: application/x-tar' -H 'X-Callwire-Deadline-Ms: 2500' '${url('put')}?input=${encodeURIComponent(JSON.stringify({ containerId: into, path: '/in' }))}'; rm -f endless`,
      { D: scratch },
    );
    const lines = run.stdout.trim().split('\n');
    expect(parseResultRecord(lines[lines.length - 1]!)).toMatchObject({ outcome: 'timeout', error: { code: 'TIMEOUT' } });
    await served.expectAlive();
  }, 30_000);

  it('a hostile caller: a body that stalls is ended after the body deadline (5 s quiet) with TIMEOUT', async () => {
    const tar = (await dockerCli(['cp', `${c}:/data`, '-'])).stdout;
    const input = encodeURIComponent(JSON.stringify({ containerId: into, path: '/in' }));
    const req = request(`${url('put')}?input=${input}`, { method: 'PUT', headers: { 'content-type': 'application/x-tar' } });
    // Part of a valid archive, then nothing: the request stays open.
    req.write(tar.subarray(0, 2048));
    const text = await new Promise<string>((resolve, reject) => {
      req.on('error', reject);
      req.on('response', (res) => {
        let body = '';
        res.on('data', (chunk: Buffer) => (body += chunk.toString()));
        res.on('end', () => resolve(body));
      });
    });
    req.destroy();
    const lines = text.trim().split('\n');
    expect(parseResultRecord(lines[lines.length - 1]!)).toMatchObject({ outcome: 'timeout', error: { code: 'TIMEOUT', message: 'the tar body sent nothing for 5000 ms' } });
  }, 30_000);

  it('a heavy user: 256 MiB to a curl that reads slowly, the server\'s memory bounded, the bytes docker cp\'s', async () => {
    const dir = mkdtempSync(join(scratch, 'big-'));
    const rss = rssGrowthSampler(served.run.child.pid!);
    let growth: number;
    let run: Shell;
    try {
      run = await sh(`curl -sN -D "$D/headers" --limit-rate 32M -H 'Accept: application/x-tar' -H 'content-type: application/json' -d '${JSON.stringify({ containerId: c, path: '/big' })}' '${url('get')}' | sha256sum`, { D: dir });
    } finally {
      growth = rss.stop();
    }
    console.log(`[archive-http-tar] get 256 MiB to curl --limit-rate 32M: server RSS +${(growth / MiB).toFixed(1)} MiB`);
    const digest = run.stdout.split(/\s+/)[0];
    const reference = await sh(`${DOCKER_CLI} cp ${c}:/big - | sha256sum`);
    expect(digest).toBe(reference.stdout.split(/\s+/)[0]);
    expect(headersIn(join(dir, 'headers'))['x-callwire-archive-sha256']).toBe(digest);
    expect(growth).toBeLessThan(BOUND);
  }, 60_000);

  it('a heavy user: 96 MiB in through curl -T from a pipe, the server\'s memory bounded, the file whole in the container', async () => {
    const input = encodeURIComponent(JSON.stringify({ containerId: into, path: '/in' }));
    const rss = rssGrowthSampler(served.run.child.pid!);
    let growth: number;
    let run: Shell;
    try {
      run = await sh(`${DOCKER_CLI} cp ${c}:/mid - | curl -s -T - -H 'content-type: application/x-tar' '${url('put')}?input=${input}'`);
    } finally {
      growth = rss.stop();
    }
    console.log(`[archive-http-tar] put 96 MiB from curl -T -: server RSS +${(growth / MiB).toFixed(1)} MiB`);
    expect(JSON.parse(run.stdout.trim().split('\n')[0]!)).toMatchObject({ terminal: true, bytes: expect.any(Number) });
    const sum = async (containerId: string, path: string): Promise<string | undefined> => (await dockerCli(['exec', containerId, 'sha256sum', path])).stdout.toString().split(/\s+/)[0];
    expect(await sum(into, '/in/mid')).toBe(await sum(c, '/mid'));
    expect(growth).toBeLessThan(BOUND);
  }, 60_000);
});
