import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type Docker from 'dockerode';
import { afterAll, describe, expect, it } from 'vitest';
import { Registry } from '../../src/dispatcher/index.js';
import type { Envelope } from '../../src/protocol/index.js';
import { dockerOperations } from '../../src/operations/index.js';
import type { DockerEngine } from '../../src/server/index.js';
import { MemoryConnection } from '../../src/testing/index.js';
import { DockerFixture } from '../support/docker.js';

/**
 * An engine on which, the moment the ownership check has inspected `name`, that name
 * moves from alice's container to bob's: what a caller can arrange with a rename, or
 * with a removal that lets an id prefix match another container. Whatever acts after
 * the check must act on the container the check saw.
 */
function movingName(real: DockerEngine, name: string, alice: string, bob: string): DockerEngine {
  let moved = false;
  const container = (reference: string): Docker.Container => {
    const found = real.container(reference);
    if (reference !== name || moved) return found;
    const inspect = found.inspect.bind(found);
    found.inspect = (async () => {
      const info = await inspect();
      moved = true;
      await real.docker.getContainer(alice).rename({ name: `${name}-moved` });
      await real.docker.getContainer(bob).rename({ name });
      return info;
    }) as typeof found.inspect;
    return found;
  };
  return { ...real, container };
}

const stdoutOf = async (conn: MemoryConnection, id: string): Promise<{ text: string; end: Envelope }> => {
  let text = '';
  for (;;) {
    const e = await conn.client.nextFor(id, 15_000);
    if (e.type === 'call.credit') continue;
    if (e.type !== 'call.responded') return { text, end: e };
    const output = e.payload.output as { text?: string; terminal?: boolean };
    if (output.terminal) return { text, end: e };
    text += output.text ?? '';
  }
};

describe('an operation acts on the container its ownership check saw, never on the name again (spec §12)', () => {
  const docker = new DockerFixture();
  afterAll(() => docker.cleanup());

  /** alice's container, named `name`, and bob's; each prints its owner's name first. */
  async function pair(): Promise<{ name: string; alice: string; bob: string; conn: MemoryConnection }> {
    const name = `race-${docker.runId.slice(0, 8)}-${Math.random().toString(16).slice(2, 8)}`;
    const owned = (owner: string) => ({ 'callwire.managed': 'true', 'callwire.owner': owner });
    const alice = await docker.container(owned('alice'), ['sh', '-c', 'echo alice; exec sleep 1000000']);
    const bob = await docker.container(owned('bob'), ['sh', '-c', 'echo bob; exec sleep 1000000']);
    await docker.engine.docker.getContainer(alice).rename({ name });
    const engine = movingName(docker.engine, name, alice, bob);
    const conn = new MemoryConnection({ registry: new Registry().register(...dockerOperations(engine)), identity: { subject: 'alice', scopes: ['container:*'] } });
    return { name, alice, bob, conn };
  }
  const state = async (id: string): Promise<{ Running: boolean; StartedAt: string }> => (await docker.engine.docker.getContainer(id).inspect()).State;

  it('exec runs in alice\'s container, not in the one that took its name', async () => {
    const { name, alice, conn } = await pair();
    conn.client.request('x', 'docker/container/exec', { containerId: name, cmd: ['hostname'] });
    const { text, end } = await stdoutOf(conn, 'x');
    expect(end.type).toBe('call.responded');
    expect(text).toBe(`${alice.slice(0, 12)}\n`);
  });

  it('logs are alice\'s', async () => {
    const { name, conn } = await pair();
    conn.client.request('l', 'docker/container/logs', { containerId: name });
    const first = await conn.client.nextFor('l', 15_000);
    expect(first).toMatchObject({ type: 'call.responded', payload: { output: { text: 'alice' } } });
  });

  it.each(['stop', 'restart', 'remove'] as const)('%s reaches alice\'s container and leaves bob\'s running, untouched', async (action) => {
    const { name, alice, bob, conn } = await pair();
    const before = { alice: await state(alice), bob: await state(bob) };
    conn.client.request('a', `docker/container/${action}`, { containerId: name, ...(action === 'remove' ? { force: true } : { timeoutSeconds: 0 }) });
    const answer = await conn.client.nextFor('a', 30_000);
    expect(answer).toMatchObject({ type: 'call.responded', payload: { output: { containerId: alice } } });
    expect(await state(bob)).toEqual(before.bob);
    if (action === 'stop') expect((await state(alice)).Running).toBe(false);
    if (action === 'restart') expect((await state(alice)).StartedAt).not.toBe(before.alice.StartedAt);
  });
});

describe('a pull pointed at a server inside the network (spec §12)', () => {
  it("fails with IMAGE_PULL_FAILED and does not relay the server's answer", async () => {
    const secret = `internal-page-${Math.random().toString(16).slice(2)}`;
    const asked: string[] = [];
    const registry = createServer((req, res) => {
      asked.push(`${req.method} ${req.url}`);
      res.writeHead(404, { 'content-type': 'text/html' }).end(`<!DOCTYPE html><html>${secret}</html>`);
    });
    await new Promise<void>((resolve) => registry.listen(0, '127.0.0.1', resolve));
    try {
      const port = (registry.address() as AddressInfo).port;
      const conn = new MemoryConnection({ registry: new Registry().register(...dockerOperations(new DockerFixture().engine)), identity: { subject: 'alice', scopes: ['image:*'] } });
      conn.client.request('p', 'docker/image/pull', { image: `127.0.0.1:${port}/internal/secret:latest` });
      const answer = await conn.client.next((e) => e.id === 'p' && e.type === 'call.error', 30_000);
      // The engine did ask that server, and quoted its answer in the error it gave us.
      expect(asked).toContain('GET /v2/internal/secret/manifests/latest');
      expect(answer.payload).toMatchObject({ code: 'IMAGE_PULL_FAILED', message: expect.stringMatching(/response body \(not shown\)/) });
      expect(JSON.stringify(answer.payload)).not.toContain(secret);
    } finally {
      await new Promise((resolve) => registry.close(resolve));
    }
  });
});
