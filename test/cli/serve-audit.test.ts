import { chownSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { z } from 'zod';
import { cliPath, runCli, type CliRun } from '../support/cli.js';
import { DockerFixture, dockerHost } from '../support/docker.js';
import { Tmux } from '../support/tmux.js';
import { sleep } from '../support/wait.js';

const TOKEN = 'tok-4f1b9c0e8d7a6b5c4d3e2f1a0b9c8d7e';
const SECRET = 'env-value-7e6d5c4b3a29';
const tokensEnv = { CALLWIRE_TOKENS: JSON.stringify({ tokens: [{ token: TOKEN, subject: 'auditor-test', scopes: ['*'] }] }), CALLWIRE_TOKENS_FILE: '' };

/** One line of the audit log, exactly: a field more or less is a failure. */
const auditLine = z.strictObject({
  time: z.iso.datetime(),
  call_id: z.string(),
  subject: z.string().nullable(),
  operation: z.string(),
  container: z.string().optional(),
  cmd: z.array(z.string()).optional(),
  env_names: z.array(z.string()).optional(),
  tty: z.boolean().optional(),
  outcome: z.enum(['completed', 'error', 'cancelled', 'refused']),
  error_code: z.string().optional(),
  exit_code: z.number().int().nullable().optional(),
  bytes_in: z.number().int().min(0),
  bytes_out: z.number().int().min(0),
  duration_ms: z.number().int().min(0),
  transport: z.enum(['websocket', 'http']).optional(),
});
type AuditLine = z.infer<typeof auditLine>;

/** asciicast v2 (docs.asciinema.org/manual/asciicast/v2): a header line, then [time, code, data] events in time order. */
const castHeader = z.looseObject({ version: z.literal(2), width: z.number().int().positive(), height: z.number().int().positive(), timestamp: z.number().int().positive(), command: z.string() });
const castEvent = z.tuple([z.number().min(0), z.enum(['o', 'i', 'r', 'm']), z.string()]);

function parseCast(text: string): { header: z.infer<typeof castHeader>; events: z.infer<typeof castEvent>[] } {
  expect(text.endsWith('\n')).toBe(true);
  const [first, ...rest] = text.slice(0, -1).split('\n');
  const header = castHeader.parse(JSON.parse(first!));
  const events = rest.map((line) => castEvent.parse(JSON.parse(line)));
  for (let i = 1; i < events.length; i++) expect(events[i]![0]).toBeGreaterThanOrEqual(events[i - 1]![0]);
  return { header, events };
}

/**
 * `callwire serve --audit FILE --record DIR` as a process of its own, with a token,
 * driven by the real CLI, HTTP and a real terminal (tmux): one audit line per call
 * on every transport, a terminal session as an asciicast v2 recording, and the
 * token and an env value in neither.
 */
describe('callwire serve --audit and --record', () => {
  const docker = new DockerFixture();
  const dir = mkdtempSync(join(tmpdir(), 'callwire-audit-'));
  const auditPath = join(dir, 'audit.jsonl');
  const recordDir = join(dir, 'casts');
  let server: CliRun;
  let url = '';
  let wtUrl = '';
  let certHash = '';
  let c = '';
  let term: Tmux | undefined;

  const audit = (): AuditLine[] => {
    const text = readFileSync(auditPath, 'utf8');
    return text === '' ? [] : text.trimEnd().split('\n').map((line) => auditLine.parse(JSON.parse(line)));
  };
  /** The audit line of the one call that matches; waits for it, since a line is written as its call ends. */
  const lineFor = async (match: (line: AuditLine) => boolean): Promise<AuditLine> => {
    await expect.poll(() => audit().filter(match).length, { timeout: 10_000 }).toBe(1);
    return audit().find(match)!;
  };
  const cli = (args: string[]): CliRun => runCli(['--url', url, '--token', TOKEN, ...args], { stdin: 'ignore' });

  beforeAll(async () => {
    server = runCli(['serve', '--port', '0', '--wt-port', '0', '--no-http3', '--audit', auditPath, '--record', recordDir], { env: { DOCKER_HOST: dockerHost, ...tokensEnv } });
    await server.waitFor(/certificate +sha256 [0-9a-f]{64}/, 'stdout', 15_000);
    url = /ws:\/\/127\.0\.0\.1:\d+\/callwire/.exec(server.stdout)![0];
    wtUrl = /https:\/\/127\.0\.0\.1:\d+\/callwire/.exec(server.stdout)![0];
    certHash = /sha256 ([0-9a-f]{64})/.exec(server.stdout)![1]!;
    c = await docker.container();
  });
  afterEach(() => {
    term?.kill();
    term = undefined;
  });
  afterAll(async () => {
    server.child.kill('SIGTERM');
    await server.exited;
    await docker.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a finished exec: who, which container, which command, the variables’ names only, the exit code, bytes each way', async () => {
    const run = cli(['exec', '-e', `SECRET=${SECRET}`, c, '--', 'sh', '-c', 'echo hello; exit 3']);
    expect((await run.exited).code).toBe(3);
    const line = await lineFor((l) => l.cmd?.[2] === 'echo hello; exit 3');
    expect(line).toMatchObject({ subject: 'auditor-test', operation: 'docker/container/exec', container: c, cmd: ['sh', '-c', 'echo hello; exit 3'], env_names: ['SECRET'], tty: false, outcome: 'completed', exit_code: 3 });
    expect(line.error_code).toBeUndefined();
    // The request carries the command; the output its "hello\n" and the terminal item.
    expect(line.bytes_in).toBeGreaterThan(c.length);
    expect(line.bytes_out).toBeGreaterThan('hello\n'.length);
  });

  it('failed calls: an exec in a container that does not exist ends in error; an unknown operation and a bad input are refused', async () => {
    expect((await cli(['exec', 'no-such-container-xyz', '--', 'true']).exited).code).not.toBe(0);
    expect(await lineFor((l) => l.container === 'no-such-container-xyz')).toMatchObject({ operation: 'docker/container/exec', outcome: 'error', error_code: 'CONTAINER_NOT_FOUND', exit_code: null, subject: 'auditor-test' });

    expect((await cli(['call', 'no/such-op']).exited).code).not.toBe(0);
    expect(await lineFor((l) => l.operation === 'no/such-op')).toMatchObject({ outcome: 'refused', error_code: 'NOT_FOUND', subject: 'auditor-test', bytes_out: 0 });

    expect((await cli(['call', 'docker/container/inspect', '--input', '{"containerId":42}']).exited).code).not.toBe(0);
    const refused = await lineFor((l) => l.operation === 'docker/container/inspect' && l.outcome === 'refused');
    expect(refused).toMatchObject({ error_code: 'INVALID_INPUT', subject: 'auditor-test' });
    expect(refused.bytes_in).toBeGreaterThan(0);
  });

  it('a cancelled call: the CLI stopped mid-exec aborts it, and the line says cancelled with no exit code', async () => {
    const run = cli(['exec', c, '--', 'sh', '-c', 'echo started; sleep 300']);
    await run.waitFor(/started/, 'stdout');
    run.child.kill('SIGTERM');
    expect((await run.exited).code).toBe(130);
    expect(await lineFor((l) => l.cmd?.[2] === 'echo started; sleep 300')).toMatchObject({ outcome: 'cancelled', exit_code: null, container: c });
  });

  it('an exec over HTTP (POST /call/…) is audited as one over WebSocket is', async () => {
    const base = url.replace('ws://', 'http://').replace(/\/callwire$/, '');
    const body = JSON.stringify({ containerId: c, cmd: ['sh', '-c', 'echo over http; exit 7'], env: [`SECRET=${SECRET}`] });
    const response = await fetch(`${base}/call/docker/container/exec`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` }, body });
    expect(response.status).toBe(200);
    await response.text();
    const line = await lineFor((l) => l.cmd?.[2] === 'echo over http; exit 7');
    expect(line).toMatchObject({ subject: 'auditor-test', outcome: 'completed', exit_code: 7, env_names: ['SECRET'], bytes_in: Buffer.byteLength(body) });
    expect(line.bytes_out).toBeGreaterThan('over http\n'.length);
  });

  it('an exec over WebTransport (HTTP/2) is audited as one over WebSocket is, and a refused call there names the subject of its per-call token', async () => {
    const run = runCli(['--url', wtUrl, '--cert-hash', certHash, '--transport', 'h2', '--token', TOKEN, 'exec', c, '--', 'sh', '-c', 'echo over wt; exit 9'], { stdin: 'ignore' });
    expect((await run.exited).code).toBe(9);
    expect(run.stdout).toBe('over wt\n');
    expect(await lineFor((l) => l.cmd?.[2] === 'echo over wt; exit 9')).toMatchObject({ subject: 'auditor-test', container: c, outcome: 'completed', exit_code: 9 });
    // WebTransport carries the token in each call (auth_token): a refused call is still the token's subject's.
    const refused = runCli(['--url', wtUrl, '--cert-hash', certHash, '--transport', 'h2', '--token', TOKEN, 'call', 'wt/no-such-op'], { stdin: 'ignore' });
    expect((await refused.exited).code).not.toBe(0);
    expect(await lineFor((l) => l.operation === 'wt/no-such-op')).toMatchObject({ outcome: 'refused', error_code: 'NOT_FOUND', subject: 'auditor-test' });
  });

  it('every refused token is one audit line: HTTP (JSON, SSE, NDJSON answers), a WebSocket upgrade, WebTransport (issue 31, finding 13)', async () => {
    const base = url.replace('ws://', 'http://').replace(/\/callwire$/, '');
    const bad = { authorization: 'Bearer not-a-token-of-this-server' };
    for (const [name, accept] of [['json', 'application/json'], ['sse', 'text/event-stream'], ['ndjson', 'application/x-ndjson']] as const) {
      const response = await fetch(`${base}/call/audit-401/${name}`, { method: 'POST', headers: { ...bad, accept, 'content-type': 'application/json' }, body: '{}' });
      expect(response.status).toBe(401);
      await response.text();
      expect(await lineFor((l) => l.operation === `audit-401/${name}`)).toMatchObject({ transport: 'http', outcome: 'refused', error_code: 'FORBIDDEN', subject: null, call_id: '', bytes_out: 0 });
    }
    // A WebSocket upgrade with an unknown token: 401 before any call, one line that names no operation.
    const status = await new Promise<number>((resolve, reject) => {
      const socket = new WebSocket(url, ['callwire.v1.msgpack'], { headers: bad });
      socket.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
      socket.on('open', () => reject(new Error('the upgrade was accepted')));
      socket.on('error', () => undefined);
    });
    expect(status).toBe(401);
    expect(await lineFor((l) => l.transport === 'websocket')).toMatchObject({ operation: '', outcome: 'refused', error_code: 'FORBIDDEN', subject: null, call_id: '' });
    // WebTransport carries the token in each call: the call's refusal (of an operation that exists: an unknown one is NOT_FOUND first) is its line.
    const refused = runCli(['--url', wtUrl, '--cert-hash', certHash, '--transport', 'h2', '--token', 'not-a-token-either', 'call', 'services/info'], { stdin: 'ignore' });
    expect((await refused.exited).code).not.toBe(0);
    expect(await lineFor((l) => l.operation === 'services/info' && l.error_code === 'FORBIDDEN')).toMatchObject({ outcome: 'refused', subject: null });
    expect(readFileSync(auditPath, 'utf8')).not.toContain('not-a-token');
  });

  it('exec -it in a real terminal, resized: one asciicast v2 recording that holds what the terminal showed and the new size', async () => {
    const before = new Set(readdirSync(recordDir));
    term = new Tmux(100, 30, { CALLWIRE_TOKEN: TOKEN });
    term.type(`'${process.execPath}' '${cliPath}' --url ${url} exec -it -e SECRET=${SECRET} ${c} sh; echo DONE`);
    await term.waitFor(/^\/ #\s*$/m);
    term.type('echo $((6*7))x');
    await term.waitFor(/^42x\r?$/m);
    // A euro sign in two writes (two output items of bytes): the cast must hold it whole.
    term.type("printf 'u\\342'; sleep 0.3; printf '\\202\\254v\\n'");
    await term.waitFor(/^u.*v\r?$/m);
    term.resize(120, 40);
    // The resize crosses as an input item; the shell sees it on its next read.
    await sleep(300);
    term.type('stty size');
    await term.waitFor(/^40 120\r?$/m);
    term.type('exit 0');
    await term.waitFor(/^DONE$/m);

    const line = await lineFor((l) => l.tty === true && l.cmd?.[0] === 'sh' && l.env_names?.[0] === 'SECRET');
    expect(line).toMatchObject({ outcome: 'completed', exit_code: 0 });
    let added: string[] = [];
    await expect.poll(() => (added = readdirSync(recordDir).filter((name) => !before.has(name))).length).toBe(1);
    const file = join(recordDir, added[0]!);
    expect(added[0]).toMatch(/^[0-9T-]+Z-[A-Za-z0-9_-]+-\d+\.cast$/);
    // Written as the call ended; the file is closed just after. The echo of the last line typed may
    // come in several output events (a busy shell echoes key by key): what they show together counts.
    const shownIn = (text: string): string => parseCast(text).events.filter((e) => e[1] === 'o').map((e) => e[2]).join('');
    await expect.poll(() => shownIn(readFileSync(file, 'utf8'))).toContain('exit 0');
    const { header, events } = parseCast(readFileSync(file, 'utf8'));
    expect(header).toMatchObject({ width: 100, height: 30, command: 'sh' });
    const shown = shownIn(readFileSync(file, 'utf8'));
    // The echo of what was typed and the shell's answer, as the terminal showed them.
    expect(shown).toContain('echo $((6*7))x');
    expect(shown).toMatch(/\r\n42x\r\n/);
    expect(shown).toMatch(/\r\n40 120\r\n/);
    expect(shown).toContain('u\u20acv\r\n');
    expect(events.filter((e) => e[1] === 'r').map((e) => e[2])).toEqual(['120x40']);
    // What was typed is not recorded as input: the terminal's echo is the record of it.
    expect(events.some((e) => e[1] === 'i')).toBe(false);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(recordDir).mode & 0o777).toBe(0o700);
  });

  it('the audit file is mode 0600, and neither it nor any recording holds the token or an env value', async () => {
    // After the calls above, one of them with the token in an HTTP header, and env values in every exec.
    expect(audit().length).toBeGreaterThanOrEqual(5);
    expect(statSync(auditPath).mode & 0o777).toBe(0o600);
    const texts = [readFileSync(auditPath, 'utf8'), ...readdirSync(recordDir).map((name) => readFileSync(join(recordDir, name), 'utf8'))];
    expect(texts.length).toBeGreaterThanOrEqual(2);
    for (const text of texts) {
      expect(text).not.toContain(TOKEN);
      expect(text).not.toContain(SECRET);
    }
    expect(readdirSync(recordDir).length).toBe(1); // execs without a terminal are not recorded
  });
});

describe('callwire serve --audit: stdout, and a file that cannot be written', () => {
  const runs: CliRun[] = [];
  const dirs: string[] = [];
  afterAll(async () => {
    for (const run of runs) run.child.kill('SIGKILL');
    await Promise.all(runs.map((run) => run.exited));
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });
  const serve = async (audit: string): Promise<{ run: CliRun; url: string }> => {
    const run = runCli(['serve', '--port', '0', '--no-webtransport', '--audit', audit], { stdin: 'ignore', env: { CALLWIRE_TOKENS: '', CALLWIRE_TOKENS_FILE: '' } });
    runs.push(run);
    return { run, url: (await run.waitFor(/ws:\/\/127\.0\.0\.1:\d+\/callwire/, undefined, 15_000)).trim() };
  };
  /**
   * A server that should stop before it serves (killed after the tests should it serve all
   * the same): its exit, or a failure as soon as it serves, or 15 s after its start.
   */
  const refusedAtStart = async (audit: string): Promise<{ run: CliRun; code: number | null }> => {
    const run = runCli(['serve', '--port', '0', '--no-webtransport', '--audit', audit], { stdin: 'ignore', env: { CALLWIRE_TOKENS: '', CALLWIRE_TOKENS_FILE: '' } });
    runs.push(run);
    const serving = run.waitFor(/callwire is serving/, undefined, 15_000).then(
      () => Promise.reject(new Error(`the server started serving with --audit ${audit}; stderr: ${run.stderr.slice(-500)}`)),
      () => Promise.reject(new Error(`the server neither exited nor served within 15 s; stderr: ${run.stderr.slice(-500)}`)),
    );
    const { code } = await Promise.race([run.exited, serving]);
    return { run, code };
  };

  it('--audit -: stdout carries the audit lines and nothing else (the banner goes to stderr)', async () => {
    const { run, url } = await serve('-');
    expect(run.stderr).toMatch(/callwire is serving/);
    expect((await runCli(['--url', url, 'call', 'services/info'], { stdin: 'ignore' }).exited).code).toBe(0);
    expect((await runCli(['--url', url, 'call', 'nope/nope'], { stdin: 'ignore' }).exited).code).not.toBe(0);
    await run.waitFor(/"operation":"nope\/nope"/, 'stdout');
    const lines = run.stdout.trimEnd().split('\n').map((line) => auditLine.parse(JSON.parse(line)));
    expect(lines.map((l) => [l.operation, l.outcome, l.subject])).toEqual([
      ['services/info', 'completed', 'local'],
      ['nope/nope', 'refused', 'local'],
    ]);
  });

  it('a write error (/dev/full) is logged once and the server serves on', async () => {
    const { run, url } = await serve('/dev/full');
    for (let i = 0; i < 3; i++) expect((await runCli(['--url', url, 'call', 'services/info'], { stdin: 'ignore' }).exited).code).toBe(0);
    await run.waitFor(/audit log \/dev\/full: write failed/, 'stderr');
    await sleep(200);
    expect(run.stderr.match(/write failed/g)).toHaveLength(1);
    expect(run.child.exitCode).toBeNull();
    expect((await runCli(['--url', url, 'call', 'services/info'], { stdin: 'ignore' }).exited).code).toBe(0);
  });

  it('a symbolic link planted at the audit path is refused at start: the file it points to is never appended to (issue 31, finding 12)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'callwire-audit-link-'));
    dirs.push(dir);
    const target = join(dir, 'victim');
    writeFileSync(target, 'untouched\n', { mode: 0o644 });
    const link = join(dir, 'audit.jsonl');
    symlinkSync(target, link);
    const { run, code } = await refusedAtStart(link);
    expect(code).not.toBe(0);
    expect(run.stderr).toMatch(/audit\.jsonl is a symbolic link/);
    expect(run.stdout).not.toMatch(/callwire is serving/);
    expect(readFileSync(target, 'utf8')).toBe('untouched\n');
    expect(statSync(target).mode & 0o777).toBe(0o644);
  });

  it("another user's file at the audit path is refused at start (issue 31, finding 12)", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'callwire-audit-owner-'));
    dirs.push(dir);
    const path = join(dir, 'audit.jsonl');
    writeFileSync(path, '', { mode: 0o666 });
    chownSync(path, 65534, 65534);
    const { run, code } = await refusedAtStart(path);
    expect(code).not.toBe(0);
    expect(run.stderr).toMatch(/belongs to uid 65534/);
    expect(run.stdout).not.toMatch(/callwire is serving/);
    expect(readFileSync(path, 'utf8')).toBe('');
  });

  it('an audit file that cannot be opened stops the server before it serves', async () => {
    const { run, code } = await refusedAtStart('/nonexistent-dir/audit.jsonl');
    expect(code).not.toBe(0);
    expect(run.stderr).toMatch(/audit\.jsonl/);
    expect(run.stdout).not.toMatch(/callwire is serving/);
  });
});
