import { createHash } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { exec, type Client } from '../../src/client/index.js';
import { Registry } from '../../src/dispatcher/index.js';
import { dockerOperations } from '../../src/operations/index.js';
import { MemoryConnection } from '../../src/testing/index.js';
import { useExecServer } from '../support/exec-server.js';
import { liveBytes } from '../support/live-bytes.js';
import { carrierCases } from '../support/server-fixture.js';
import { skipTitle } from '../support/skip.js';
import { sleep, until } from '../support/wait.js';

const GIB = 1024 * 1024 * 1024;
const MIB = 1024 * 1024;

// docker/container/exec's volume: every byte of a large output over each carrier, and the
// server's memory while its caller does not read (the bound is this process's heap: the file
// runs in a fork of its own). Its wall-clock bounds are in exec-behaviour.test.ts.
for (const transport of carrierCases) {
  const onceHere = transport === carrierCases[0];
  describe.skipIf(transport.missing !== undefined)(skipTitle(`docker/container/exec volume over ${transport.name}`, transport.missing), () => {
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

    it('1 GiB of output arrives with a matching hash, and the terminal byte counts equal the bytes received', async () => {
      const line = 'callwire-0123456789abcdef\n';
      const expected = createHash('sha256');
      const block = Buffer.from(line.repeat(40_000));
      let left = GIB;
      while (left > 0) {
        const piece = block.subarray(0, Math.min(block.byteLength, left));
        expected.update(piece);
        left -= piece.byteLength;
      }
      const handle = exec(client, containerId, ['sh', '-c', `yes ${line.trim()} | head -c ${GIB}`], { encoding: 'binary' });
      const hash = createHash('sha256');
      let received = 0;
      handle.output.subscribe((frame) => {
        if ('data' in frame) {
          hash.update(frame.data);
          received += frame.data.byteLength;
        }
      });
      const result = await handle.result;
      expect(result.exitCode).toBe(0);
      expect(received).toBe(GIB);
      expect(result.stdoutBytes).toBe(received);
      expect(result.stderrBytes).toBe(0);
      expect(hash.digest('hex')).toBe(expected.digest('hex'));
    }, 300_000);

    if (!onceHere) return;

    it('a slow client slows the exec down: backpressure reaches the engine and memory stays bounded', async () => {
      const registry = new Registry().register(...dockerOperations(docker.engine));
      const conn = new MemoryConnection({ registry, identity: { subject: 'local', scopes: ['*'] } });
      conn.pause();
      const before = liveBytes();
      // 400 MB that would take well under a second to produce if nothing held it back.
      conn.client.request('slow', 'docker/container/exec', { containerId, cmd: ['sh', '-c', 'yes slowpoke | head -c 400000000'], encoding: 'binary' });
      await sleep(2000);
      const extra = liveBytes() - before;
      // Still running: the engine is blocked on writes.
      const running = await docker.processes(containerId);
      expect(running.filter((p) => p.includes('slowpoke')).length, running.join(' | ')).toBeGreaterThan(0);
      expect(extra).toBeLessThan(24 * MIB);
      console.log(`exec paused 2 s: ${(extra / MIB).toFixed(1)} MiB extra in the server process`);
      expect(conn.server.stats.liveCalls).toBe(1);
      conn.client.abort('slow');
      await until(() => conn.server.stats.liveCalls === 0, 'abort processed');
      await expect.poll(async () => (await docker.processes(containerId)).filter((p) => p.includes('slowpoke')), { timeout: 2000, interval: 50 }).toEqual([]);
      conn.resume();
    });
  });
}
