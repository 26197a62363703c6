import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type Client } from '../../src/client-node/index.js';
import { runCli, type CliRun } from '../support/cli.js';
import { DockerFixture, dockerCli, RUN_LABEL, TEST_IMAGE } from '../support/docker.js';
import { within } from '../support/fleet-exec.js';
import { parseResultRecord } from '../support/result-record-schema.js';
import { ServerFixture } from '../support/server-fixture.js';

const alice = { token: 'alice-token-fan-out-0123456789', subject: 'alice', scopes: ['*'] };
const bob = { token: 'bob-token-fan-out-0123456789ab', subject: 'bob', scopes: ['container:*'] };
const SECRET = 'DB_PASSWORD=correct-horse-battery-staple';

/**
 * What a fan-out's selection takes on one server with two callers (issue 46 item 1, issue 47
 * item 2, issue 46 item 10; docs/security.md "Fan-out"): bob creates a container labelled as
 * alice's are, alice fans out by that label with a secret on stdin, through the real CLI.
 * Four containers carry the label: alice's own, bob's (both created through callwire, as
 * their tokens), the operator's (made on the engine directly), and a fourth, stopped.
 */
describe('callwire exec -l on one server: whose containers, and what could not run', () => {
  const docker = new DockerFixture();
  const fx = new ServerFixture();
  const tag = `fo${docker.runId.slice(0, 8)}`;
  const names = { alice: `${tag}-alice`, bob: `${tag}-bob`, operator: `${tag}-op`, stopped: `${tag}-stopped` };
  const ids: Record<string, string> = {};
  const clients: Client[] = [];

  const exec = (who: { token: string }, args: string[], stdin: 'pipe' | 'ignore' = 'ignore'): CliRun => runCli(['exec', '--url', fx.server.wsUrl, '--token', who.token, ...args], { stdin });
  /** The file a command left in a container, read with docker itself (not callwire): null when there is none. */
  const fileIn = async (id: string, path: string): Promise<string | null> => {
    const read = await dockerCli(['exec', id, 'cat', path]);
    return read.code === 0 ? read.stdout.toString('utf8') : null;
  };

  beforeAll(async () => {
    await fx.start({ docker: docker.engine, webTransportPort: false, tokens: [alice, bob] });
    const create = async (who: { token: string }, name: string): Promise<string> => {
      const client = await connect(fx.server.wsUrl, { token: who.token });
      clients.push(client);
      const { containerId } = await client.call<{ containerId: string }>('docker/container/create', { image: TEST_IMAGE, name, cmd: ['sleep', '1000000'], labels: { role: tag, [RUN_LABEL]: docker.runId } });
      await client.call('docker/container/start', { containerId });
      return containerId;
    };
    ids['alice'] = await create(alice, names.alice);
    ids['bob'] = await create(bob, names.bob);
    const made = await docker.engine.docker.createContainer({ Image: TEST_IMAGE, name: names.operator, Cmd: ['sleep', '1000000'], Labels: { role: tag, [RUN_LABEL]: docker.runId }, HostConfig: { NetworkMode: 'none' } });
    await made.start();
    ids['operator'] = made.id;
    ids['stopped'] = (await docker.engine.docker.createContainer({ Image: TEST_IMAGE, name: names.stopped, Cmd: ['true'], Labels: { role: tag, [RUN_LABEL]: docker.runId }, HostConfig: { NetworkMode: 'none' } })).id;
  }, 60_000);

  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
    await fx.stop();
    await docker.cleanup();
  });

  it("alice's secret on stdin goes to her container and the operator's, never into bob's labelled one", async () => {
    const run = exec(alice, ['-l', `role=${tag}`, '-i', '--', 'sh', '-c', 'cat > /tmp/app.env; echo stored'], 'pipe');
    run.child.stdin.end(`${SECRET}\n`);
    expect((await within(run.exited, 30_000, 'the fan-out')).code, run.stderr).toBe(0);
    expect(run.lines.filter((l) => l.stream === 'stdout').map((l) => l.line).sort()).toEqual([`${names.alice}: stored`, `${names.operator}: stored`]);
    expect(await fileIn(ids['alice']!, '/tmp/app.env')).toBe(`${SECRET}\n`);
    expect(await fileIn(ids['operator']!, '/tmp/app.env')).toBe(`${SECRET}\n`);
    expect(await fileIn(ids['bob']!, '/tmp/app.env')).toBeNull();
  }, 60_000);

  it('--dry-run shows each target with its owner and says how many of other owners were left out; --any-owner takes them', async () => {
    const dry = exec(alice, ['-l', `role=${tag}`, '--dry-run']);
    expect((await dry.exited).code).toBe(0);
    expect(dry.stdout).toBe(`${names.alice}\talice\n${names.operator}\t-\n`);
    expect(dry.stderr).toContain('1 container of other owners matched and was left out (--any-owner takes them)');
    const any = exec(alice, ['-l', `role=${tag}`, '--any-owner', '--dry-run']);
    expect((await any.exited).code).toBe(0);
    expect(any.stdout).toBe(`${names.alice}\talice\n${names.bob}\tbob\n${names.operator}\t-\n`);
  }, 30_000);

  it("--json carries each target's owner; a name written whole is taken whoever owns it", async () => {
    const run = exec(alice, ['--json', '--targets', `${names.bob},${tag}-op*`, '--', 'hostname']);
    expect((await run.exited).code, run.stderr).toBe(0);
    const records = run.stdout.trim().split('\n').slice(0, -1).map((line) => parseResultRecord(line));
    expect(records.map((r) => [r['target'], r['owner']]).sort()).toEqual([
      [names.bob, 'bob'],
      [names.operator, null],
    ]);
  }, 30_000);

  it("bob, without '*': a label that alice's containers also carry selects only his and the operator's, and succeeds", async () => {
    const run = exec(bob, ['-l', `role=${tag}`, '--', 'true']);
    expect((await run.exited).code, run.stderr).toBe(0);
    const dry = exec(bob, ['-l', `role=${tag}`, '--dry-run']);
    await dry.exited;
    expect(dry.stdout).toBe(`${names.bob}\tbob\n${names.operator}\t-\n`);
  }, 30_000);

  it('a name that ran nowhere is not run (123), named in the summary with why: one that does not exist, one that is stopped', async () => {
    const missing = exec(alice, ['--targets', `${names.operator},${tag}-nosuch`, '--', 'true']);
    expect((await missing.exited).code).toBe(123);
    const summary = missing.lines.filter((l) => l.stream === 'stderr').at(-1)?.line ?? '';
    expect(summary).toMatch(new RegExp(`^2 targets: 1 exit 0, 1 not run \\(${tag}-nosuch: no such container: ${tag}-nosuch\\)$`));
    const stopped = exec(alice, ['--targets', `${names.operator},${names.stopped}`, '--', 'true']);
    expect((await stopped.exited).code).toBe(123);
    expect(stopped.stderr).toMatch(new RegExp(`1 not run \\(${names.stopped}: [^)]*not running`));
    // --json names them too, with the code.
    const json = exec(alice, ['--json', '--targets', `${names.operator},${tag}-nosuch`, '--', 'true']);
    expect((await json.exited).code).toBe(123);
    const last = JSON.parse(json.stdout.trim().split('\n').at(-1)!) as Record<string, unknown>;
    expect(last).toMatchObject({ kind: 'callwire.fan-out', targets: 2, exit_code: 123, not_run: 1, failed: [{ target: `${tag}-nosuch`, error: { code: 'CONTAINER_NOT_FOUND' } }] });
  }, 30_000);

  it("a target's control characters cannot forge another's line: escaped in prefixed output, carried unchanged by --json", async () => {
    const forge = `printf '\\r\\033[2K${names.alice}: migrated\\n\\033]0;owned\\007\\302\\233m\\n'`;
    const run = exec(alice, ['--targets', names.operator, '--', 'sh', '-c', forge]);
    expect((await run.exited).code).toBe(0);
    expect(run.stdout).toBe(`${names.operator}: \\r\\x1b[2K${names.alice}: migrated\n${names.operator}: \\x1b]0;owned\\x07\\x9bm\n`);
    const json = exec(alice, ['--json', '--targets', names.operator, '--', 'sh', '-c', forge]);
    expect((await json.exited).code).toBe(0);
    const record = parseResultRecord(json.stdout.trim().split('\n')[0]!);
    expect((record['exec'] as { stdout: string }).stdout).toBe(`\r\u001b[2K${names.alice}: migrated\n\u001b]0;owned\u0007\u009bm\n`);
  }, 30_000);
});
