import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DockerFixture, dockerHost, RUN_LABEL, TEST_IMAGE } from '../support/docker.js';
import { runCli, type CliRun } from '../support/cli.js';
import { parseResultRecord } from '../support/result-record-schema.js';
import { until } from '../support/wait.js';

const OPS_TOKEN = 'fw-ops-token-0123456789';
const RUNNER_TOKEN = 'fw-runner-token-0123456789';

/** curl as a person types it: what it printed and its exit code. */
function curl(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn('curl', ['-sS', ...args]);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

type Line = Record<string, unknown>;
const json = (text: string): Line[] =>
  text
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Line);

/**
 * `POST /call/docker/container/exec-many` against a real `callwire serve` and real
 * containers (issue 35 item 4): one request, NDJSON or SSE lines each tagged with its
 * target, then the summary and the exec envelope; and the audit log's lines (item 5).
 */
describe('fan-out exec over HTTP, from curl', () => {
  const docker = new DockerFixture();
  const selector = `fanweb=${docker.runId.slice(0, 8)}`;
  const names = [0, 1, 2].map((n) => `fw-${docker.runId.slice(0, 8)}-${n}`);
  let serve: CliRun;
  let base = '';
  let dir = '';
  let audit = '';

  const post = (token: string, input: unknown, extra: string[] = []): ReturnType<typeof curl> =>
    curl(['-N', '-X', 'POST', `${base}/call/docker/container/exec-many`, '-H', `authorization: Bearer ${token}`, '-H', 'content-type: application/json', ...extra, '-d', JSON.stringify(input)]);
  const auditLines = (): Line[] => json(readFileSync(audit, 'utf8'));

  beforeAll(async () => {
    // Exit codes 0, 3 and 0: the fan-out's own is the largest.
    for (const [n, name] of names.entries()) {
      const created = await docker.engine.docker.createContainer({
        name,
        Image: TEST_IMAGE,
        Cmd: ['sleep', '1000000'],
        Env: [`N=${n === 1 ? 3 : 0}`],
        Labels: { [RUN_LABEL]: docker.runId, fanweb: selector.split('=')[1]! },
        HostConfig: { NetworkMode: 'none' },
      });
      await created.start();
    }
    dir = mkdtempSync(join(tmpdir(), 'callwire-fw-'));
    const tokens = join(dir, 'tokens.json');
    audit = join(dir, 'audit.log');
    writeFileSync(
      tokens,
      JSON.stringify({
        tokens: [
          { token: OPS_TOKEN, subject: 'ops', scopes: ['container:*'] },
          // May exec, may not list: a selection is a list, so a fan-out is refused, as by hand.
          { token: RUNNER_TOKEN, subject: 'runner', scopes: ['container:exec'] },
        ],
      }),
    );
    serve = runCli(['serve', '--port', '0', '--no-webtransport', '--tokens', tokens, '--audit', audit], { stdin: 'ignore', env: { DOCKER_HOST: dockerHost } });
    const wsUrl = (await serve.waitFor(/ws:\/\/127\.0\.0\.1:\d+\/callwire/, 'stdout', 15_000)).trim();
    base = wsUrl.replace('ws://', 'http://').replace(/\/callwire$/, '');
  }, 60_000);

  afterAll(async () => {
    serve?.child.kill('SIGKILL');
    await serve?.exited;
    await docker.cleanup();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('streams NDJSON: the selection, each line tagged with its target, each result, the summary, the envelope; exit code in the trailer', async () => {
    const { code, stdout } = await post(OPS_TOKEN, { labels: [selector], cmd: ['sh', '-c', 'echo "on $(hostname)"; echo oops >&2; exit $N'] }, ['-i', '--raw']);
    expect(code).toBe(0);
    const lines = json(stdout.split('\r\n\r\n').slice(1).join('\r\n\r\n'));
    // Made on the engine directly, not through callwire: no owner, and taken.
    expect(lines[0]).toEqual({ targets: names, owners: Object.fromEntries(names.map((n) => [n, null])), othersLeftOut: 0 });
    const frames = lines.filter((l) => 'frame' in l) as { target: string; frame: { stream: string; text: string } }[];
    for (const name of names) {
      const own = frames.filter((f) => f.target === name);
      expect(own.map((f) => f.frame.stream).sort()).toEqual(['stderr', 'stdout']);
      expect(own.find((f) => f.frame.stream === 'stdout')!.frame.text).toMatch(/^on [0-9a-f]{12}\n$/);
    }
    const results = lines.filter((l) => 'result' in l).map((l) => l['result'] as { target: string; exitCode: number });
    expect(Object.fromEntries(results.map((r) => [r.target, r.exitCode]))).toEqual({ [names[0]!]: 0, [names[1]!]: 3, [names[2]!]: 0 });
    const summary = lines.find((l) => 'summary' in l) as { summary: { targets: number; exitCode: number; text: string }; terminal: boolean };
    expect(summary.terminal).toBe(true);
    expect(summary.summary).toMatchObject({ targets: 3, exitCode: 3, text: `3 targets: 2 exit 0, 1 exit 3 (${names[1]})` });
    const envelope = parseResultRecord(JSON.stringify(lines[lines.length - 1]));
    expect(envelope).toMatchObject({ command: 'exec', operation: 'docker/container/exec-many', exit_code: 3, exec: { exit_code: 3, stdout_bytes: 48, stderr_bytes: 15 } });
    expect(stdout).toMatch(/\r\nX-Callwire-Exit-Code: 3\r\n/i);
  });

  it('streams Server-Sent Events with Accept: text/event-stream, every event tagged with its target', async () => {
    const { stdout } = await post(OPS_TOKEN, { targets: [`${names[0]}`, `${names[2]}`], cmd: ['echo', 'hi'] }, ['-H', 'accept: text/event-stream']);
    const events = stdout
      .split('\n\n')
      .filter(Boolean)
      .map((e) => JSON.parse(e.slice(e.indexOf('data: ') + 6)) as Line);
    expect(events[0]).toEqual({ targets: [names[0], names[2]], owners: { [names[0]!]: null, [names[2]!]: null }, othersLeftOut: 0 });
    const frames = events.filter((e) => 'frame' in e);
    expect(frames.map((f) => f['target']).sort()).toEqual([names[0], names[2]]);
    for (const f of frames) expect(f['frame']).toEqual({ stream: 'stdout', text: 'hi\n' });
    expect(events.find((e) => 'summary' in e)).toMatchObject({ summary: { targets: 2, exitCode: 0 }, terminal: true });
    expect(events[events.length - 1]).toMatchObject({ kind: 'callwire.terminal', outcome: 'success', exit_code: 0 });
  });

  it('audits the fan-out with its selection, and each target as its own exec line of the caller', async () => {
    const cmd = ['sh', '-c', 'exit $N'];
    const { stdout } = await post(OPS_TOKEN, { labels: [selector], targets: ['fw-*'], cmd });
    expect(json(stdout).find((l) => 'summary' in l)).toMatchObject({ summary: { exitCode: 3 } });
    const ours = (): Line[] => auditLines().filter((l) => JSON.stringify(l['cmd']) === JSON.stringify(cmd));
    await until(() => ours().length === 4, 'four audit lines');
    const [fanOut, ...execs] = [ours().find((l) => l['operation'] === 'docker/container/exec-many')!, ...ours().filter((l) => l['operation'] === 'docker/container/exec')];
    expect(fanOut).toMatchObject({ subject: 'ops', selection: { labels: [selector], targets: ['fw-*'] }, outcome: 'completed', exit_code: 3 });
    expect(execs.map((l) => [l['container'], l['subject'], l['exit_code'], l['outcome']]).sort()).toEqual([
      [names[0], 'ops', 0, 'completed'],
      [names[1], 'ops', 3, 'completed'],
      [names[2], 'ops', 0, 'completed'],
    ]);
    // Each target's line names the fan-out's call; the fan-out's own line has no parent.
    expect(fanOut['call_id']).toEqual(expect.any(String));
    expect(fanOut).not.toHaveProperty('parent_call_id');
    expect(execs.map((l) => l['parent_call_id'])).toEqual([fanOut['call_id'], fanOut['call_id'], fanOut['call_id']]);
  });

  it('a caller who may exec but not list is refused the selection, as by hand, and nothing runs as anyone', async () => {
    const cmd = ['echo', 'runner was here'];
    const { stdout } = await post(RUNNER_TOKEN, { labels: [selector], cmd });
    const envelope = parseResultRecord(JSON.stringify(json(stdout).pop()));
    expect(envelope).toMatchObject({ outcome: 'forbidden', exit_code: 122, error: { code: 'FORBIDDEN' } });
    await until(() => auditLines().some((l) => l['subject'] === 'runner' && l['operation'] === 'docker/container/exec-many'), 'the fan-out\'s line');
    const runner = auditLines().filter((l) => l['subject'] === 'runner');
    expect(runner.map((l) => [l['operation'], l['outcome'], l['error_code']]).sort()).toEqual([
      ['docker/container/exec-many', 'error', 'FORBIDDEN'],
      ['docker/container/list', 'refused', 'FORBIDDEN'],
      // Whose containers are the caller's own: asked beside the list.
      ['services/info', 'completed', undefined],
    ]);
    // The refused list was the fan-out's selection: its line says so.
    const fanOutLine = runner.find((l) => l['operation'] === 'docker/container/exec-many')!;
    expect(runner.find((l) => l['operation'] === 'docker/container/list')).toMatchObject({ parent_call_id: fanOutLine['call_id'] });
    expect(auditLines().filter((l) => JSON.stringify(l['cmd']) === JSON.stringify(cmd) && l['operation'] === 'docker/container/exec')).toEqual([]);
  });
});
