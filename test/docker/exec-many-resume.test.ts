import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type Client } from '../../src/client-node/index.js';
import { DockerFixture, RUN_LABEL, TEST_IMAGE } from '../support/docker.js';
import { readStream, type StreamRecord } from '../support/http-stream.js';
import { ServerFixture } from '../support/server-fixture.js';

const ALICE = { token: 'alice-everything-token-0123456789', subject: 'alice', scopes: ['*'] };
/** alice again, every container scope but not `*`: another's container is not hers to act on. */
const ALICE_CONTAINERS = { token: 'alice-containers-token-012345678', subject: 'alice', scopes: ['container:*'] };
/** alice again, exec alone: she could not have made the fan-out's selection. */
const ALICE_EXEC = { token: 'alice-exec-only-token-0123456789', subject: 'alice', scopes: ['container:exec'] };
const BOB = { token: 'bob-containers-token-0123456789a', subject: 'bob', scopes: ['container:*'] };

/**
 * Issue 46 item 2 on one server (docs/security.md "Fan-out", a hostile caller): the checks a
 * fan-out's inner calls made of its caller, a container's owner and each operation's scopes,
 * bind its resume (HTTP `x-callwire-resume`), as they would bind a resume of each call.
 */
describe("a fan-out's resume on one server is held to its inner calls' checks", () => {
  const docker = new DockerFixture();
  const fx = new ServerFixture();
  const tag = `rsm${docker.runId.slice(0, 8)}`;
  const bobs = `${tag}-bob`;
  const clients: Client[] = [];
  let base = '';

  beforeAll(async () => {
    await fx.start({ docker: docker.engine, webTransportPort: false, tokens: [ALICE, ALICE_CONTAINERS, ALICE_EXEC, BOB] });
    base = fx.server.wsUrl.replace('ws://', 'http://').replace(/\/callwire$/, '');
    const bob = await connect(fx.server.wsUrl, { token: BOB.token });
    clients.push(bob);
    const { containerId } = await bob.call<{ containerId: string }>('docker/container/create', { image: TEST_IMAGE, name: bobs, cmd: ['sleep', '1000000'], labels: { [RUN_LABEL]: docker.runId } });
    await bob.call('docker/container/start', { containerId });
    const made = await docker.engine.docker.createContainer({ Image: TEST_IMAGE, name: `${tag}-op`, Cmd: ['sleep', '1000000'], Labels: { [RUN_LABEL]: docker.runId, rsm: tag }, HostConfig: { NetworkMode: 'none' } });
    await made.start();
  }, 60_000);
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
    await fx.stop();
    await docker.cleanup();
  });

  const path = '/call/docker/container/exec-many';
  const loop = 'i=0; while [ $i -lt 20 ]; do echo "$i"; i=$((i+1)); sleep 0.1; done';
  /** Alice's fan-out with every scope, read until it has two frames, then cut. */
  const started = (input: unknown) =>
    readStream(`${base}${path}`, { headers: { authorization: `Bearer ${ALICE.token}`, 'x-callwire-resume-ms': '30000' }, body: JSON.stringify(input) }, (records) => records.filter((r) => r.data.includes('"frame"')).length >= 2);
  const resume = (token: string, first: { headers: Record<string, string>; records: readonly StreamRecord[] }) =>
    readStream(`${base}${path}`, { headers: { authorization: `Bearer ${token}`, 'x-callwire-resume': first.headers['x-callwire-resume-token']!, 'x-callwire-resume-after': String(first.records.length) } });

  it("by name over bob's container: alice without '*' is refused the resume (its owner), alice with it takes it up", async () => {
    const first = await started({ targets: [bobs], cmd: ['sh', '-c', loop] });
    const narrow = await resume(ALICE_CONTAINERS.token, first);
    expect(narrow.status).toBe(403);
    expect(narrow.records.map((r) => r.data).join('\n')).toMatch(/belongs to another caller/);
    const rest = await resume(ALICE.token, first);
    expect(rest.status).toBe(200);
    expect(rest.records.find((r) => r.data.includes('"summary"'))?.data).toMatch(/"exitCode":0/);
  }, 60_000);

  it('by label: a token that may exec but not list is refused the resume, as it would be the selection', async () => {
    const first = await started({ labels: [`rsm=${tag}`], cmd: ['sh', '-c', loop] });
    const narrow = await resume(ALICE_EXEC.token, first);
    expect(narrow.status).toBe(403);
    expect(narrow.records.map((r) => r.data).join('\n')).toMatch(/missing scope: container:list/);
    const rest = await resume(ALICE.token, first);
    expect(rest.status).toBe(200);
  }, 60_000);
});
