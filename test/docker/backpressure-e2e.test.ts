import { spawn } from 'node:child_process';
import { beforeAll, describe, expect, it } from 'vitest';
import { execFrames } from '../../src/client/index.js';
import { cliPath } from '../support/cli.js';
import { useExecServer } from '../support/exec-server.js';
import { liveBytes } from '../support/live-bytes.js';
import { childPids, commandLine, rssOf } from '../support/proc.js';
import { carrierCases } from '../support/server-fixture.js';
import { skipTitle } from '../support/skip.js';
import { sleep } from '../support/wait.js';

const MIB = 1024 * 1024;
const GIB = 1024 * MIB;

/**
 * A slow reader slows the container's command down, end to end (spec §4.8): the
 * server holds only the call's credit, the client only its window, and nothing in
 * between grows with the output.
 */
describe('end-to-end backpressure: a reader that pauses', () => {
  const { docker, fx, containerId: container } = useExecServer({ webTransport: true });
  let containerId = '';
  beforeAll(() => {
    containerId = container();
  });

  it('callwire exec … dd 1 GiB | (sleep 10; wc -c): the CLI stays under 120 MiB RSS, the server under 48 MiB more, and every byte arrives', async () => {
    const child = spawn('bash', ['-c', `'${process.execPath}' '${cliPath}' --url ${fx.server.wsUrl} exec ${containerId} -- dd if=/dev/zero bs=1M count=1024 2>/dev/null | (sleep 10; wc -c)`]);
    let stdout = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    const before = liveBytes();
    await sleep(1500);
    // The CLI is the node process under bash: on a loaded machine bash may not have started it yet.
    const cliUnderBash = (): number | undefined => childPids(child.pid!).find((pid) => commandLine(pid).some((arg) => arg === cliPath));
    for (let waited = 0; cliUnderBash() === undefined && waited < 15_000; waited += 100) await sleep(100);
    const cli = cliUnderBash();
    if (cli === undefined) throw new Error('the CLI did not start under bash within 15 s');
    let cliPeak = 0;
    let serverPeak = 0;
    for (let t = 0; t < 14; t++) {
      await sleep(500);
      cliPeak = Math.max(cliPeak, rssOf(cli));
      serverPeak = Math.max(serverPeak, liveBytes() - before);
    }
    console.log(`paused reader: CLI RSS peak ${(cliPeak / MIB).toFixed(1)} MiB, server heap growth ${(serverPeak / MIB).toFixed(1)} MiB`);
    expect(cliPeak).toBeLessThan(120 * MIB);
    expect(serverPeak).toBeLessThan(48 * MIB);
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    expect(code).toBe(0);
    expect(stdout.trim()).toBe(String(GIB));
  }, 120_000);

  for (const transport of carrierCases) {
    it.skipIf(transport.missing !== undefined)(skipTitle(`${transport.name}: an SDK loop that stops pulling holds the exec; memory stays bounded and every byte arrives`, transport.missing), async () => {
      const client = await fx.client(transport);
      const frames = execFrames(client, containerId, ['dd', 'if=/dev/zero', 'bs=1M', 'count=256'], { encoding: 'binary' });
      let received = 0;
      const first = await frames.next();
      received += !first.done && 'data' in first.value && first.value.stream === 'stdout' ? first.value.data.byteLength : 0;
      const before = liveBytes();
      await sleep(2000); // not pulling
      const growth = liveBytes() - before;
      console.log(`${transport.name}: ${(growth / MIB).toFixed(1)} MiB more while the loop did not pull`);
      expect(growth).toBeLessThan(24 * MIB);
      // dd is blocked on its pipe, not done.
      expect((await docker.processes(containerId)).some((p) => p.startsWith('dd '))).toBe(true);
      for (let step = await frames.next(); ; step = await frames.next()) {
        if (step.done) {
          expect(step.value.exitCode).toBe(0);
          break;
        }
        if ('data' in step.value && step.value.stream === 'stdout') received += step.value.data.byteLength; // dd reports on stderr
      }
      expect(received).toBe(256 * MIB);
    }, 60_000);
  }
});
