import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DockerFixture, RUN_LABEL, TEST_IMAGE } from '../support/docker.js';
import { Fleet, type GatewayRun } from '../support/fleet.js';
import { readStream, type StreamRecord } from '../support/http-stream.js';
import { parseResultRecord } from '../support/result-record-schema.js';
import { sleep, until } from '../support/wait.js';

/** alice, hosts a and b. */
const ALICE_AB = 'alice-hosts-a-and-b-token-0123456';
/** alice again, the same exec scope, host a only (`host:` scopes, docs/fleet.md "Security"). */
const ALICE_A = 'alice-host-a-only-token-01234567';

type Line = Record<string, unknown>;
const lines = (records: readonly StreamRecord[]): Line[] => records.map((r) => JSON.parse(r.data) as Line);

/**
 * Issue 46 item 2 (docs/security.md "Fan-out", a hostile caller): an `exec-many` at a gateway
 * makes its targets' execs on its caller's behalf, and its resume must need every check
 * those execs passed. A real gateway with tokens and an audit log, two agents on the test
 * engine (so the container is a target on both hosts), plain HTTP's resume
 * (`x-callwire-resume`): a token of the same subject holding `host:a` only takes up neither
 * the fan-out's b output, nor, when it resumes before b's exec starts, b's exec.
 */
describe("a fan-out's resume at a gateway is held to its inner calls' host scopes", () => {
  const docker = new DockerFixture();
  const name = `rs-${docker.runId.slice(0, 8)}`;
  let fleet: Fleet;
  let gateway: GatewayRun;
  let base = '';
  let dir = '';
  let audit = '';

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'callwire-fan-out-resume-'));
    audit = join(dir, 'audit.log');
    const tokens = join(dir, 'tokens.json');
    writeFileSync(tokens, JSON.stringify({ tokens: [{ token: ALICE_AB, subject: 'alice', scopes: ['container:*', 'host:a', 'host:b'] }, { token: ALICE_A, subject: 'alice', scopes: ['container:*', 'host:a'] }] }));
    const created = await docker.engine.docker.createContainer({ Image: TEST_IMAGE, name, Cmd: ['sleep', '1000000'], Labels: { [RUN_LABEL]: docker.runId }, HostConfig: { NetworkMode: 'none' } });
    await created.start();
    fleet = await Fleet.start({ hosts: ['a', 'b'], nodes: 1 });
    await Promise.all([fleet.agent('a'), fleet.agent('b')]);
    gateway = await fleet.gateway({ extraArgs: ['--tokens', tokens, '--audit', audit] });
    base = gateway.wsUrl.replace('ws://', 'http://').replace(/\/callwire$/, '');
    const client = await fleet.client(gateway, ALICE_AB);
    // Both hosts up and listing it (a host's table names it from its next beat).
    for (let tries = 0; ; tries++) {
      const list = await client.call<{ containers: { host: string; names: string[] }[] }>('docker/container/list', { all: false });
      if (list.containers.filter((c) => c.names.includes(`/${name}`)).length === 2) break;
      if (tries > 120) throw new Error(`${name} is not listed on both hosts: ${JSON.stringify(list)}`);
      await sleep(250);
    }
  }, 120_000);

  afterAll(async () => {
    await fleet?.stop();
    await docker.cleanup();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const path = '/call/docker/container/exec-many';
  const as = (token: string): Record<string, string> => ({ authorization: `Bearer ${token}` });
  /** The fan-out, read until `enough` says its connection is cut. */
  const start = (input: unknown, enough: (seen: Line[]) => boolean) =>
    readStream(`${base}${path}`, { headers: { ...as(ALICE_AB), 'x-callwire-resume-ms': '30000' }, body: JSON.stringify(input) }, (records) => enough(lines(records)));
  const resume = (token: string, resumeToken: string, after: number) => readStream(`${base}${path}`, { headers: { ...as(token), 'x-callwire-resume': resumeToken, 'x-callwire-resume-after': String(after) } });
  const resumeLines = (): Line[] =>
    readFileSync(audit, 'utf8')
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Line)
      .filter((l) => 'resume' in l);
  const loop = 'i=0; while [ $i -lt 30 ]; do echo "$i"; i=$((i+1)); sleep 0.1; done';

  it('host:a only: 403 "missing scope: host:b", nothing of b read; the fan-out goes on for the token that started it; both audited', async () => {
    const framesOf = (seen: Line[], host: string): number => seen.filter((l) => 'frame' in l && String(l['target']).startsWith(`${host}/`)).length;
    const first = await start({ targets: [`*/${name}`], cmd: ['sh', '-c', loop] }, (seen) => framesOf(seen, 'a') >= 2 && framesOf(seen, 'b') >= 2);
    expect(first.complete).toBe(false);
    const token = first.headers['x-callwire-resume-token']!;
    const narrow = await resume(ALICE_A, token, first.records.length);
    expect(narrow.status).toBe(403);
    expect(narrow.records.map((r) => r.data).join('\n')).toMatch(/missing scope: host:b/);
    expect(narrow.records.some((r) => /"frame"/.test(r.data))).toBe(false);
    const rest = await resume(ALICE_AB, token, first.records.length);
    expect(rest.status).toBe(200);
    expect(rest.complete).toBe(true);
    const all = lines([...first.records, ...rest.records]);
    expect(all.find((l) => 'summary' in l)).toMatchObject({ summary: { targets: 2, exitCode: 0 } });
    expect(parseResultRecord(rest.records.at(-1)!.data)).toMatchObject({ exit_code: 0 });
    const callId = String(all.at(-1)!['call_id']);
    await until(() => resumeLines().filter((l) => l['call_id'] === callId).length === 2, 'both resumes audited');
    expect(resumeLines().filter((l) => l['call_id'] === callId).map((l) => [l['subject'], l['operation'], l['outcome'], l['error_code'] ?? null])).toEqual([
      ['alice', 'docker/container/exec-many', 'refused', 'FORBIDDEN'],
      ['alice', 'docker/container/exec-many', 'resumed', null],
    ]);
  }, 90_000);

  it("resumed by host:a only before b's exec starts: b's exec is made as that token, and refused", async () => {
    // One at a time, a first: when the narrow token resumes, only a's exec has run.
    const first = await start({ targets: [`*/${name}`], cmd: ['sh', '-c', loop], parallel: 1 }, (seen) => seen.filter((l) => 'frame' in l).length >= 2);
    const token = first.headers['x-callwire-resume-token']!;
    const taken = await resume(ALICE_A, token, first.records.length);
    expect(taken.status).toBe(200);
    const all = lines([...first.records, ...taken.records]);
    expect(all.some((l) => 'frame' in l && String(l['target']).startsWith('b/'))).toBe(false);
    const b = all.find((l) => 'result' in l && l['target'] === `b/${name}`);
    expect(b).toMatchObject({ result: { error: { code: 'FORBIDDEN', message: 'missing scope: host:b' } } });
    expect(all.find((l) => 'summary' in l)).toMatchObject({ summary: { targets: 2, exitCode: 123 } });
  }, 90_000);
});
