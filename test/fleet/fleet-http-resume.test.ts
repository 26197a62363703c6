import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DockerFixture } from '../support/docker.js';
import { parseResultRecord } from '../support/result-record-schema.js';
import { Fleet } from '../support/fleet.js';
import { readStream, stdoutOf, type StreamRecord } from '../support/http-stream.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { sleep } from '../support/wait.js';

const ALICE = 'alice-token-0123456789';
const LINES = 400;
/** Paced, so a cut lands in the middle and the command goes on printing while its reader is away. */
const PACED = `i=0; while [ $i -lt ${LINES} ]; do i=$((i+1)); echo line$i; [ $((i % 40)) = 0 ] && sleep 0.2; done; exit 3`;
const EXPECTED = Array.from({ length: LINES }, (_, i) => `line${i + 1}\n`).join('');

/**
 * Issue 31, finding 11: HTTP resume (spec §5.6, HTTP-6/HTTP-7) through a gateway. The
 * token of a relayed stream comes from its host once the host admits the call, and is a
 * fleet token (`fw1.<host>.…`, with dots): the answer's headers must wait for it, and a
 * resume must take it. Real processes: a NATS server, an agent beside the test engine, a
 * gateway; a TCP relay in front of the gateway that is cut in the middle of the output.
 */
describe('plain HTTP through a gateway: an exec resumed after its connection is cut', () => {
  const docker = new DockerFixture();
  let fleet: Fleet;
  let base = '';
  let proxy: TcpProxy;
  let c = '';
  let dir = '';

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'callwire-fleet-http-'));
    const tokensFile = join(dir, 'tokens.json');
    writeFileSync(tokensFile, JSON.stringify({ tokens: [{ token: ALICE, subject: 'alice', scopes: ['*'] }] }));
    c = await docker.container();
    fleet = await Fleet.start({ hosts: ['a'], nodes: 1 });
    await fleet.agent('a');
    const gateway = await fleet.gateway({ extraArgs: ['--tokens', tokensFile], });
    base = gateway.wsUrl.replace('ws://', 'http://').replace(/\/callwire$/, '');
    const probe = await fleet.client(gateway, ALICE);
    for (let i = 0; ; i++) {
      const info = await probe.call<{ fleet?: { hosts: { id: string; state: string }[] } }>('services/info', null);
      if (info.fleet?.hosts.some((h) => h.id === 'a' && h.state === 'up')) break;
      if (i > 300) throw new Error(`host a is not up: ${JSON.stringify(info.fleet)}`);
      await sleep(50);
    }
    proxy = await new TcpProxy().start(Number(new URL(base).port));
  }, 90_000);

  afterAll(async () => {
    await proxy?.stop();
    await fleet?.stop();
    await docker.cleanup();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const via = (path: string): string => `${proxy.via(base).replace(/\/$/, '')}${path}`;
  const exec = (): string => JSON.stringify({ containerId: `a/${c}`, cmd: ['sh', '-c', PACED] });
  const cutAfterLines = (lines: number) => (records: readonly StreamRecord[]): boolean => {
    if (stdoutOf(records).split('\n').length <= lines) return false;
    proxy.cut();
    return true;
  };

  it('SSE: the answer carries the fleet token; Last-Event-ID (fw1.a.….<n>) gives the rest once and the command\'s exit code', async () => {
    const first = await readStream(via('/call/docker/container/exec'), { headers: { authorization: `Bearer ${ALICE}`, accept: 'text/event-stream', 'x-callwire-resume-ms': '30000' }, body: exec() }, cutAfterLines(100));
    expect(first.complete).toBe(false);
    expect(first.headers['x-callwire-resume-token'], 'the headers waited for the host\'s token').toMatch(/^fw1\.a\./);
    const lastEventId = first.records.at(-1)!.id!;
    expect(lastEventId).toMatch(/^fw1\.a\..+\.\d+$/);
    const rest = await readStream(`${base}/call/docker/container/exec`, { headers: { authorization: `Bearer ${ALICE}`, accept: 'text/event-stream', 'last-event-id': lastEventId } });
    expect(rest.status, JSON.stringify(rest.records)).toBe(200);
    expect(rest.complete).toBe(true);
    const records = [...first.records, ...rest.records];
    expect(stdoutOf(records)).toBe(EXPECTED);
    expect(parseResultRecord(records.at(-1)!.data)).toMatchObject({ command: 'exec', outcome: 'operation_failure', exit_code: 3 });
    expect(rest.headers['x-callwire-exit-code']).toBe('3');
  }, 60_000);

  it('NDJSON: X-Callwire-Resume with the fleet token from the headers and the lines received give the rest once', async () => {
    const first = await readStream(via('/call/docker/container/exec'), { headers: { authorization: `Bearer ${ALICE}`, 'x-callwire-resume-ms': '30000' }, body: exec() }, cutAfterLines(100));
    expect(first.complete).toBe(false);
    const token = first.headers['x-callwire-resume-token'];
    expect(token, 'the headers waited for the host\'s token').toMatch(/^fw1\.a\./);
    const rest = await readStream(`${base}/call/docker/container/exec`, { headers: { authorization: `Bearer ${ALICE}`, 'x-callwire-resume': token!, 'x-callwire-resume-after': String(first.records.length) } });
    expect(rest.status, JSON.stringify(rest.records)).toBe(200);
    expect(rest.complete).toBe(true);
    const records = [...first.records, ...rest.records];
    expect(stdoutOf(records)).toBe(EXPECTED);
    expect(parseResultRecord(records.at(-1)!.data)).toMatchObject({ command: 'exec', outcome: 'operation_failure', exit_code: 3 });
  }, 60_000);
});
