import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, RpcError, type Client } from '../../src/client-node/index.js';
import { DockerFixture, RUN_LABEL, TEST_IMAGE } from '../support/docker.js';
import { Fleet, type GatewayRun } from '../support/fleet.js';

/** alice, every host. */
const ALICE = 'alice-all-hosts-token-0123456789';
/** alice again, the exec scope, but only host b's (`host:` scopes, docs/fleet.md "Security"). */
const ALICE_B = 'alice-host-b-token-0123456789ab';

/**
 * RSM-9 at a fleet gateway: a relayed exec on host a, resumed at the gateway that holds it
 * by a token of the same subject scoped to host b only, is refused as its start would be
 * (the host the call runs on is checked again, with the identity that asks); the call goes on.
 */
describe('a fleet call resumed at its gateway is held to the host scope its start passed', () => {
  const docker = new DockerFixture();
  const name = `resume-host-${docker.runId.slice(0, 8)}`;
  let fleet: Fleet;
  let gateway: GatewayRun;
  const clients: Client[] = [];
  let dir = '';

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'callwire-resume-host-'));
    const tokensFile = join(dir, 'tokens.json');
    writeFileSync(tokensFile, JSON.stringify({ tokens: [{ token: ALICE, subject: 'alice', scopes: ['*'] }, { token: ALICE_B, subject: 'alice', scopes: ['container:*', 'host:b'] }] }));
    const created = await docker.engine.docker.createContainer({ Image: TEST_IMAGE, name, Cmd: ['sleep', '1000000'], Labels: { [RUN_LABEL]: docker.runId }, HostConfig: { NetworkMode: 'none' } });
    await created.start();
    fleet = await Fleet.start({ hosts: ['a'], nodes: 1 });
    await fleet.agent('a');
    gateway = await fleet.gateway({ extraArgs: ['--tokens', tokensFile] });
  }, 90_000);
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
    await fleet?.stop();
    await docker.cleanup();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });
  const client = async (token: string): Promise<Client> => {
    const c = await connect(gateway.wsUrl, { token, resume: { graceMs: 30_000 } });
    clients.push(c);
    return c;
  };

  it('host:b only: FORBIDDEN "missing scope: host:a", the caller reading on; the call ends when its caller aborts', async () => {
    const alice = await client(ALICE);
    let token = '';
    const id = 'host-a-call';
    const stop = new AbortController();
    const seen: string[] = [];
    let ended: unknown;
    // Until host a is up at the gateway, the call is refused UNAVAILABLE: start again.
    const reading = (async () => {
      for (let attempt = 0; attempt < 300 && token === ''; attempt++) {
        try {
          for await (const item of alice.iterate<{ text?: string }>('docker/container/exec', { containerId: `a/${name}`, cmd: ['sh', '-c', 'while true; do echo tick; sleep 0.05; done'] }, { id, signal: stop.signal, onResumable: (t) => (token = t) })) {
            seen.push(item.text ?? '');
          }
        } catch (error) {
          ended = error;
          if (token === '') await new Promise((resolve) => setTimeout(resolve, 100));
        }
      }
    })();
    await expect.poll(() => token !== '' && seen.length >= 3, { timeout: 30_000 }).toBe(true);
    const narrow = await client(ALICE_B);
    const refused = await (async () => {
      try {
        for await (const _ of narrow.takeUp({ id, token, seq: seen.length, graceMs: 30_000 })) return 'took it';
        return 'ended';
      } catch (error) {
        return error;
      }
    })();
    expect(refused).toBeInstanceOf(RpcError);
    expect(refused).toMatchObject({ code: 'FORBIDDEN', message: 'missing scope: host:a' });
    const at = seen.length;
    await expect.poll(() => seen.length, { timeout: 15_000 }).toBeGreaterThanOrEqual(at + 10);
    expect(ended).toBeUndefined();
    stop.abort();
    await reading;
    await expect.poll(async () => (await docker.processes(name)).filter((args) => args.includes('echo tick')), { timeout: 15_000 }).toEqual([]);
  }, 90_000);
});
