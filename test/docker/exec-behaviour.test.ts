import { lastValueFrom } from 'rxjs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { exec, RpcError, type Client } from '../../src/client/index.js';
import { Registry } from '../../src/dispatcher/index.js';
import { dockerEngine, dockerOperations } from '../../src/operations/index.js';
import { MemoryConnection } from '../../src/testing/index.js';
import { useExecServer } from '../support/exec-server.js';
import { carrierCases } from '../support/server-fixture.js';
import { skipTitle } from '../support/skip.js';
import { until } from '../support/wait.js';

// What rides the carrier (abort, a dropped connection) runs over each of them; what does not
// (validation, the engine's errors) once. Bounds in wall-clock time: the file runs alone
// (test/projects.ts); the volume of output and the server's memory are in exec-volume.test.ts.
for (const transport of carrierCases) {
  const onceHere = transport === carrierCases[0];
  describe.skipIf(transport.missing !== undefined)(skipTitle(`docker/container/exec behaviour over ${transport.name}`, transport.missing), () => {
    const { docker, fx, containerId: container } = useExecServer({ webTransport: !onceHere });
    let containerId = '';
    let client: Client;
    beforeEach(async () => {
      containerId = container();
      client = await fx.client(transport);
    });
    afterEach(async () => {
      // No exec outlives its test: only the container's own sleep is left.
      await until(() => fx.liveCalls() === 0, 'no live calls');
      await expect.poll(() => docker.processes(containerId), { timeout: 3000 }).toEqual(['sleep 1000000']);
    });

    it('abort of sleep 1000 mid-exec: the process is gone from the container within 2 s', async () => {
      const subscription = client.subscribe('docker/container/exec', { containerId, cmd: ['sh', '-c', 'echo started; sleep 1000'] }).subscribe();
      await expect.poll(() => docker.processes(containerId), { timeout: 5000 }).toContain('sleep 1000');
      const started = Date.now();
      subscription.unsubscribe();
      await expect.poll(async () => (await docker.processes(containerId)).filter((p) => p.includes('sleep 1000') && !p.includes('1000000')), { timeout: 2000, interval: 50 }).toEqual([]);
      expect(Date.now() - started).toBeLessThan(2000);
    });

    it('a dropped connection kills the exec too, within 2 s', async () => {
      const other = await fx.client(transport);
      other.subscribe('docker/container/exec', { containerId, cmd: ['sleep', '1000'] }).subscribe({ error: () => undefined });
      await expect.poll(() => docker.processes(containerId), { timeout: 5000 }).toContain('sleep 1000');
      const started = Date.now();
      await other.close();
      await expect.poll(async () => (await docker.processes(containerId)).filter((p) => p === 'sleep 1000'), { timeout: 2000, interval: 50 }).toEqual([]);
      expect(Date.now() - started).toBeLessThan(2000);
    });

    if (!onceHere) return;

    it('unknown container: CONTAINER_NOT_FOUND with the id in details', async () => {
      const handle = exec(client, 'no-such-container-xyz', ['true']);
      await expect(handle.result).rejects.toMatchObject({ code: 'CONTAINER_NOT_FOUND', details: { containerId: 'no-such-container-xyz' } });
    });

    it('tty: true is refused with INVALID_INPUT that says what tty takes', async () => {
      const error = await lastValueFrom(client.subscribe('docker/container/exec', { containerId, cmd: ['sh'], tty: true })).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RpcError);
      expect(error).toMatchObject({ code: 'INVALID_INPUT', message: expect.stringMatching(/^input\.tty: .*\{cols, rows\}/) });
    });

    it('an empty command is INVALID_INPUT naming the field', async () => {
      await expect(lastValueFrom(client.subscribe('docker/container/exec', { containerId, cmd: [] }))).rejects.toMatchObject({ code: 'INVALID_INPUT', message: expect.stringMatching(/^input\.cmd: /) });
    });

    it('a stopped container is DOCKER_ERROR saying so', async () => {
      const stopped = await docker.container();
      await docker.engine.docker.getContainer(stopped).stop({ t: 0 });
      await expect(exec(client, stopped, ['true']).result).rejects.toMatchObject({ code: 'DOCKER_ERROR', message: expect.stringMatching(/not running/) });
    });

    it('an unreachable engine answers a clear error at once, not a hang', async () => {
      const registry = new Registry().register(...dockerOperations(dockerEngine('unix:///tmp/callwire-no-engine.sock')));
      const conn = new MemoryConnection({ registry, identity: { subject: 'local', scopes: ['*'] } });
      const started = Date.now();
      conn.client.request('x', 'docker/container/exec', { containerId, cmd: ['true'] });
      // After the admission credit (CR-1: exec takes an input stream), the answer.
      const answer = await conn.client.next((e) => e.id === 'x' && e.type !== 'call.credit', 5000);
      expect(answer.type === 'call.error' && answer.payload).toMatchObject({ code: 'DOCKER_ERROR', retryable: true, message: expect.stringMatching(/unreachable.*socket does not exist/) });
      expect(Date.now() - started).toBeLessThan(3000);
    });

  });
}
