import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RpcError } from '../../src/protocol/index.js';
import { DockerFixture } from '../support/docker.js';
import { ServerFixture, transportCases } from '../support/server-fixture.js';
import { until } from '../support/wait.js';

/** spec §9, LIM-3: `maxExecSessionsPerIdentity` counts an identity's live execs on every connection. */
describe('maxExecSessionsPerIdentity (LIM-3)', () => {
  const docker = new DockerFixture();
  const fx = new ServerFixture();
  let containerId = '';
  beforeAll(async () => {
    await fx.start({
      docker: docker.engine,
      webTransportPort: false,
      tokens: [
        { token: 'alice-token', subject: 'alice', scopes: ['*'] },
        { token: 'bob-token', subject: 'bob', scopes: ['*'] },
      ],
      limits: { maxExecSessionsPerIdentity: 1 },
    });
    containerId = await docker.container();
  });
  afterAll(async () => {
    await fx.stop();
    await docker.cleanup();
    expect(await docker.ours()).toEqual([]);
  });

  const exec = (client: Awaited<ReturnType<ServerFixture['client']>>, cmd: string[]): Promise<unknown[]> => {
    const outputs: unknown[] = [];
    return new Promise((resolve, reject) => {
      client.subscribe('docker/container/exec', { containerId, cmd }).subscribe({ next: (v) => outputs.push(v), error: reject, complete: () => resolve(outputs) });
    });
  };

  it("one identity's second exec is LIMIT_EXCEEDED while its first runs; its other calls, and another identity's exec, run; the place is free once the first ends", async () => {
    const alice = await fx.client(transportCases[0]!, { token: 'alice-token' });
    const aliceAgain = await fx.client(transportCases[0]!, { token: 'alice-token' });
    const bob = await fx.client(transportCases[0]!, { token: 'bob-token' });
    const running = alice.subscribe('docker/container/exec', { containerId, cmd: ['sleep', '1002'] }).subscribe({ error: () => undefined });
    await until(() => fx.liveCalls() === 1, "alice's exec live");
    const refused = await exec(aliceAgain, ['true']).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(RpcError);
    expect((refused as RpcError).code).toBe('LIMIT_EXCEEDED');
    expect((refused as RpcError).message).toContain('maxExecSessionsPerIdentity');
    // Calls that run no command are not exec sessions.
    expect(await aliceAgain.call('services/info', null)).toMatchObject({ identity: { subject: 'alice' } });
    expect((await exec(bob, ['sh', '-c', 'echo bob'])).at(-1)).toMatchObject({ terminal: true, exitCode: 0 });

    running.unsubscribe();
    await until(() => fx.liveCalls() === 0, "alice's first exec ended");
    expect((await exec(aliceAgain, ['true'])).at(-1)).toMatchObject({ terminal: true, exitCode: 0 });
  });

  it("an ended exec gives its place back while another call of the identity stays live (issue 31: the test above let the record go, which hid a leaked place)", async () => {
    const alice = await fx.client(transportCases[0]!, { token: 'alice-token' });
    await until(() => fx.liveCalls() === 0, 'no call live');
    // A call that runs no command and never ends by itself keeps alice's record in the ledger.
    const following = alice.subscribe('docker/container/logs', { containerId, follow: true }).subscribe({ error: () => undefined });
    await until(() => fx.liveCalls() === 1, "alice's logs call live");
    for (let i = 0; i < 3; i++) {
      // With a cap of 1, each exec runs only if the one before gave its place back.
      expect((await exec(alice, ['sh', '-c', `exit ${i}`])).at(-1)).toMatchObject({ terminal: true, exitCode: i });
    }
    expect(fx.liveCalls()).toBe(1);
    following.unsubscribe();
    await until(() => fx.liveCalls() === 0, "alice's logs call ended");
  });
});
