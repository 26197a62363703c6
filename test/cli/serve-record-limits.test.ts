import { spawnSync } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, statfsSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, exec } from '../../src/client-node/index.js';
import { runCli, type CliRun } from '../support/cli.js';
import { DockerFixture, dockerHost } from '../support/docker.js';
import { within } from '../support/wait.js';

/**
 * Issue 31, finding 9: a recording is held to a cap and says where it stopped, keeps
 * up with a burst, a strict server ends a session it cannot record, and the audit log
 * keeps the disk before the recordings and outlives a disk that filled up. Real CLI
 * servers, real terminal execs in a real container, a real full tmpfs; every cast is
 * read back by Debian's `asciinema cat`.
 */

const NO_TOKENS = { CALLWIRE_TOKENS: '', CALLWIRE_TOKENS_FILE: '' };
/** 500,000 bytes of \x01: each is 6 bytes of JSON ("\u0001") in a cast, 3 MB in all. */
const CONTROL_BYTES = (n: number): string => `head -c ${n} /dev/zero | tr '\\0' '\\1'`;

type CastEvent = [number, string, string];

function readCast(path: string): { text: string; header: Record<string, unknown>; events: CastEvent[] } {
  const text = readFileSync(path, 'utf8');
  expect(text.endsWith('\n')).toBe(true);
  const [first, ...rest] = text.slice(0, -1).split('\n');
  return { text, header: JSON.parse(first!) as Record<string, unknown>, events: rest.map((line) => JSON.parse(line) as CastEvent) };
}

/** `asciinema cat` (it wants a terminal: `script` lends it one); its exit code and what it printed. */
function asciinemaCat(path: string): { status: number | null; stdout: string } {
  const run = spawnSync('script', ['-q', '-e', '-c', `asciinema cat ${path}`, '/dev/null'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 60_000 });
  return { status: run.status, stdout: run.stdout };
}

/** The closing events of a recording that stopped early: an "o" line a player shows, then an "m" marker, both saying why. */
function expectStoppedEnding(events: CastEvent[], why: RegExp): void {
  const [shown, marker] = events.slice(-2);
  expect(shown![1]).toBe('o');
  expect(shown![2]).toMatch(/the recording stopped here/);
  expect(shown![2]).toMatch(why);
  expect(marker![1]).toBe('m');
  expect(marker![2]).toMatch(why);
}

interface Served {
  run: CliRun;
  url: string;
}

async function serve(args: string[]): Promise<Served> {
  const run = runCli(['serve', '--port', '0', '--no-webtransport', ...args], { stdin: 'ignore', env: { DOCKER_HOST: dockerHost, ...NO_TOKENS } });
  const url = (await run.waitFor(/ws:\/\/127\.0\.0\.1:\d+\/callwire/, 'stdout', 15_000)).trim();
  return { run, url };
}

/** The one cast a call left, once it is closed (its last line written). */
async function newCast(dir: string, before: Set<string>): Promise<string> {
  let added: string[] = [];
  await expect.poll(() => (added = readdirSync(dir).filter((name) => !before.has(name))).length, { timeout: 15_000 }).toBe(1);
  const path = join(dir, added[0]!);
  // Written as the call ends; closed just after.
  let size = -1;
  await expect.poll(() => {
    const now = statSync(path).size;
    const settled = now === size && readFileSync(path, 'utf8').endsWith('\n');
    size = now;
    return settled;
  }, { timeout: 30_000, interval: 500 }).toBe(true);
  return path;
}

const auditLines = (path: string): Record<string, unknown>[] => {
  const text = readFileSync(path, 'utf8');
  return text === '' ? [] : text.trimEnd().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
};

describe('serve --record: caps, bursts and --record-strict (issue 31, finding 9)', () => {
  const docker = new DockerFixture();
  const dir = mkdtempSync(join(tmpdir(), 'callwire-record-limits-'));
  const servers: Served[] = [];
  let c = '';

  beforeAll(async () => {
    c = await docker.container();
  });
  afterAll(async () => {
    for (const { run } of servers) run.child.kill('SIGKILL');
    await Promise.all(servers.map(({ run }) => run.exited));
    await docker.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });
  const started = async (args: string[]): Promise<Served> => {
    const served = await serve(args);
    servers.push(served);
    return served;
  };

  it('--record-max-bytes: 3 MB of cast is cut at 1 MiB, the cast ends with a shown line and a marker saying so, asciinema reads it, and the session goes on', async () => {
    const casts = join(dir, 'capped');
    const audit = join(dir, 'capped.jsonl');
    const { url } = await started(['--record', casts, '--record-max-bytes', String(1024 * 1024), '--audit', audit]);
    const run = runCli(['--url', url, 'exec', '-t', c, '--', 'sh', '-c', `${CONTROL_BYTES(500_000)}; echo; echo after-$((1+1))-cap`], { stdin: 'ignore' });
    expect((await run.exited).code).toBe(0);
    expect(run.stdout).toContain('after-2-cap'); // the session went on past the cap
    const path = await newCast(casts, new Set());
    expect(statSync(path).size).toBeLessThanOrEqual(1024 * 1024);
    // It stops at the output item that would cross the cap: items are up to 64 KiB of bytes, 6 bytes each as JSON.
    expect(statSync(path).size).toBeGreaterThan(1024 * 1024 - 6 * 64 * 1024 - 1024);
    const { text, events } = readCast(path);
    expectStoppedEnding(events, /cap of 1048576 bytes \(--record-max-bytes\); the session went on unrecorded/);
    expect(text.includes('after-2-cap')).toBe(false);
    const cat = asciinemaCat(path);
    expect(cat.status).toBe(0);
    expect(cat.stdout).toContain('the recording stopped here');
    await expect.poll(() => auditLines(audit).filter((l) => l['tty'] === true).length).toBe(1);
    expect(auditLines(audit).find((l) => l['tty'] === true)).toMatchObject({ outcome: 'completed', exit_code: 0 });
  });

  it('a burst of 12 MB of cast is recorded whole, and what is typed after it is in the cast', async () => {
    const casts = join(dir, 'burst');
    const { url } = await started(['--record', casts]);
    const client = await connect(url);
    try {
      const shell = exec(client, c, ['sh'], { stdin: 'pipe', tty: { cols: 100, rows: 30 } });
      let screen = '';
      shell.output.subscribe({ next: (f) => (screen += 'text' in f ? f.text : ''), error: () => undefined });
      const shown = (pattern: RegExp): Promise<void> => expect.poll(() => pattern.test(screen), { timeout: 60_000 }).toBe(true);
      await shell.stdin.write(`${CONTROL_BYTES(2_000_000)}; echo burst-$((1+1))-done\r`);
      await shown(/burst-2-done/);
      await shell.stdin.write('echo typed-$((6*7))-after\r');
      await shown(/typed-42-after/);
      await shell.stdin.write('exit 0\r');
      expect((await shell.result).exitCode).toBe(0);
    } finally {
      client.close();
    }
    const path = await newCast(casts, new Set());
    const { events } = readCast(path);
    const output = events.filter((e) => e[1] === 'o').map((e) => e[2]).join('');
    expect(output.split('\x01').length - 1).toBe(2_000_000);
    expect(/typed-42-after/.test(output)).toBe(true);
    expect(events.some((e) => e[1] === 'm')).toBe(false);
  });

  it("a caller's hostile call id never puts a recording outside --record DIR (issue 31: the tests' ids were UUIDs)", async () => {
    const top = join(dir, 'hostile-ids');
    const casts = join(top, 'a', 'casts');
    const { url } = await started(['--record', casts]);
    const client = await connect(url);
    try {
      for (const id of ['../../../escaped', '/../../escaped-abs', '..', '.hidden-escaped']) {
        const shell = exec(client, c, ['sh', '-c', 'echo recorded-$((40+2))'], { id, tty: { cols: 80, rows: 24 } });
        expect((await shell.result).exitCode).toBe(0);
      }
    } finally {
      client.close();
    }
    const everything = (readdirSync(top, { recursive: true }) as string[]).map((name) => join(top, name));
    // Every file the server wrote is a cast directly in DIR, named by letters, digits, _ and -.
    const files = everything.filter((path) => statSync(path).isFile());
    expect(files.every((path) => path.startsWith(`${casts}/`) && /^[0-9T-]+Z-[A-Za-z0-9_-]+-\d+\.cast$/.test(path.slice(casts.length + 1)))).toBe(true);
    await expect.poll(() => readdirSync(casts).length, { timeout: 15_000 }).toBe(4);
    expect(readdirSync(casts).some((name) => name.includes('_________escaped'))).toBe(true);
    await expect.poll(() => readdirSync(casts).every((name) => readFileSync(join(casts, name), 'utf8').includes('recorded-42')), { timeout: 15_000 }).toBe(true);
  });

  it('--record-strict: a session whose recording reaches its cap is ended (LIMIT_EXCEEDED, EXEC-11), and its cast says so', async () => {
    const casts = join(dir, 'strict');
    const audit = join(dir, 'strict.jsonl');
    const { url } = await started(['--record', casts, '--record-max-bytes', '65536', '--record-strict', '--audit', audit]);
    const run = runCli(['--url', url, 'exec', '-t', c, '--', 'sh', '-c', `echo started; ${CONTROL_BYTES(100_000)}; sleep 120; echo never`], { stdin: 'ignore' });
    // Ended by the server at the cap, long before the command's 120 s would end it.
    const ended = await within(run.exited, 20_000, 'the session ended at its recording cap');
    expect(ended.code).not.toBe(0);
    expect(run.stdout).not.toContain('never');
    expect(run.stdout + run.stderr).toMatch(/LIMIT_EXCEEDED|recording stopped/);
    await expect.poll(() => auditLines(audit).filter((l) => l['tty'] === true).length, { timeout: 15_000 }).toBe(1);
    expect(auditLines(audit).find((l) => l['tty'] === true)).toMatchObject({ outcome: 'error', error_code: 'LIMIT_EXCEEDED' });
    const path = await newCast(casts, new Set());
    expect(statSync(path).size).toBeLessThanOrEqual(65536);
    expectStoppedEnding(readCast(path).events, /cap of 65536 bytes.*the session was ended \(--record-strict\)/);
    expect(asciinemaCat(path).status).toBe(0);
  });
});

describe('the audit log on a full disk: a 2 MiB tmpfs holds the audit file and the recordings (issue 31, finding 9)', () => {
  const docker = new DockerFixture();
  const mount = mkdtempSync(join(tmpdir(), 'callwire-full-disk-'));
  const audit = join(mount, 'audit.jsonl');
  const casts = join(mount, 'casts');
  const filler = join(mount, 'filler');
  let served: Served;
  let base = '';
  let c = '';

  beforeAll(async () => {
    const mounted = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=2m', 'tmpfs', mount], { encoding: 'utf8' });
    expect(mounted.status, mounted.stderr).toBe(0);
    mkdirSync(casts);
    served = await serve(['--audit', audit, '--record', casts, '--record-reserve-bytes', String(1024 * 1024), '--record-max-bytes', String(8 * 1024 * 1024)]);
    base = served.url.replace('ws://', 'http://').replace(/\/callwire$/, '');
    c = await docker.container();
  });
  afterAll(async () => {
    served?.run.child.kill('SIGKILL');
    await served?.run.exited;
    await docker.cleanup();
    spawnSync('umount', [mount]);
    rmSync(mount, { recursive: true, force: true });
  });

  const info = async (): Promise<void> => {
    const response = await fetch(`${base}/call/services/info`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: 'null' });
    expect(response.status).toBe(200);
    await response.text();
  };
  const infoLines = (): number => auditLines(audit).filter((l) => l['operation'] === 'services/info').length;

  it('a recording stops at the reserve kept for the audit log (the cast says so, asciinema reads it), no new one starts under it, and calls are still audited', async () => {
    const run = runCli(['--url', served.url, 'exec', '-t', c, '--', 'sh', '-c', `${CONTROL_BYTES(500_000)}; echo; echo done`], { stdin: 'ignore' });
    expect((await run.exited).code).toBe(0);
    const path = await newCast(casts, new Set());
    const { events } = readCast(path);
    expectStoppedEnding(events, /kept for the audit log \(--record-reserve-bytes\); the session went on unrecorded/);
    expect(asciinemaCat(path).status).toBe(0);
    // The stop errs on the safe side (bytes in flight count as taken): bring the disk under the reserve for sure.
    const free = statfsSync(mount);
    writeFileSync(filler, Buffer.alloc(Math.max(0, free.bavail * free.bsize - 512 * 1024), 0x78));
    // Under the reserve, a second terminal session runs unrecorded; both are audited.
    const second = runCli(['--url', served.url, 'exec', '-t', c, '--', 'echo', 'second'], { stdin: 'ignore' });
    expect((await second.exited).code).toBe(0);
    await expect.poll(() => auditLines(audit).filter((l) => l['tty'] === true).length, { timeout: 15_000 }).toBe(2);
    expect(readdirSync(casts)).toHaveLength(1);
    await info();
    await expect.poll(infoLines).toBe(1);
    rmSync(filler);
  });

  it('the disk full: no line is ever torn, the lines wait, and once space is freed every call is audited, after a line that says the log resumed', async () => {
    const before = infoLines();
    // Fill every byte tmpfs will give: large writes, then single bytes.
    const fd = openSync(filler, 'w');
    for (const size of [64 * 1024, 4096, 1]) {
      const chunk = Buffer.alloc(size, 0x78);
      try {
        for (;;) writeSync(fd, chunk);
      } catch (error) {
        expect((error as NodeJS.ErrnoException).code).toBe('ENOSPC');
      }
    }
    closeSync(fd);
    // More lines than the audit file's last page has room for: one of them meets the full disk mid-line.
    for (let i = 0; i < 30; i++) await info();
    await served.run.waitFor(/the audit log .*write failed/, 'stderr', 15_000);
    // Every line in the file is whole, though some calls' lines are not there yet.
    expect(infoLines()).toBeLessThan(before + 30);
    await expect.poll(() => JSON.stringify(readFileSync(audit, 'utf8').slice(-40))).toMatch(/\\n"$/);
    auditLines(audit);
    rmSync(filler);
    await info();
    await expect.poll(infoLines, { timeout: 15_000 }).toBe(before + 31);
    const lines = auditLines(audit);
    const resumed = lines.filter((l) => l['audit'] === 'resumed');
    expect(resumed).toHaveLength(1);
    expect(resumed[0]).toMatchObject({ error: expect.stringMatching(/ENOSPC|short write/), lost_lines: 0 });
    expect(served.run.child.exitCode).toBeNull();
  });
});
