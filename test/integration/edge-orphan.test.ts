import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { connect } from '../../src/client-node/index.js';
import { runCli, type CliRun } from '../support/cli.js';
import { childPids, commandLine, isRunning } from '../support/proc.js';
import { hasHttp3, http3Missing } from '../support/server-fixture.js';
import { skipTitle } from '../support/skip.js';
import { udpFree } from '../support/udp-free.js';

/** A `callwire serve` with HTTP/3 on (its default): its WebTransport URL, certificate hash and Deno edge. */
async function serveWithHttp3(wtPort: number): Promise<{ run: CliRun; wtUrl: string; certHash: string; edge: number; edgeDir: string }> {
  const run = runCli(['serve', '--port', '0', '--wt-port', String(wtPort)], { env: { DOCKER_HOST: 'unix:///nonexistent.sock' } });
  const line = await run.waitFor(/https:\/\/127\.0\.0\.1:\d+\/callwire .*\n/, 'stdout', 30_000);
  expect(line).toMatch(/HTTP\/3 via the Deno edge/);
  const certHash = (await run.waitFor(/sha256 [0-9a-f]{64}/, 'stdout')).split(' ')[1]!;
  const edge = childPids(run.child.pid!).find((pid) => commandLine(pid).some((arg) => arg.endsWith('edge/h3-server-edge.ts')));
  if (edge === undefined) throw new Error('no edge/h3-server-edge.ts among the server\'s children');
  // Its last argument is its config file, in its private directory.
  return { run, wtUrl: line.split(' ')[0]!, certHash, edge, edgeDir: dirname(commandLine(edge).at(-1)!) };
}

/** The pid of a process that has ended. */
function deadPid(): number {
  const gone = spawnSync(process.execPath, ['-e', 'console.log(process.pid)'], { encoding: 'utf8' });
  return Number(gone.stdout.trim());
}

describe.skipIf(!hasHttp3)(skipTitle('a dead server leaves nothing behind (its HTTP/3 edge, the UDP port, the key)', http3Missing), () => {
  const runs: CliRun[] = [];
  const made: string[] = [];
  afterEach(async () => {
    for (const run of runs.splice(0)) {
      run.child.kill('SIGTERM');
      await run.exited;
    }
    for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it('SIGKILL the server: within 2 s its edge has exited, its port is free and its directory gone; a new server on that port serves HTTP/3, and clears what a dead server left', async () => {
    const first = await serveWithHttp3(0);
    runs.push(first.run);
    const port = Number(new URL(first.wtUrl).port);
    expect(readdirSync(first.edgeDir)).toContain('key.pem');
    expect(await udpFree('127.0.0.1', port)).toBe(false);

    first.run.child.kill('SIGKILL');
    await first.run.exited;
    const left = async (): Promise<{ edgeRuns: boolean; dirExists: boolean; portFree: boolean }> => ({
      edgeRuns: isRunning(first.edge),
      dirExists: existsSync(first.edgeDir),
      portFree: await udpFree('127.0.0.1', port),
    });
    await expect.poll(left, { timeout: 2000, interval: 20 }).toEqual({ edgeRuns: false, dirExists: false, portFree: true });

    // What a server and its edge killed together leave (the edge never saw its parent go),
    // beside a directory of a server that still runs (this process), which must stay.
    const orphan = join(tmpdir(), `callwire-edge-${deadPid()}-test`);
    const live = join(tmpdir(), `callwire-edge-${process.pid}-test`);
    for (const dir of [orphan, live]) {
      mkdirSync(dir);
      writeFileSync(join(dir, 'key.pem'), 'a key');
      made.push(dir);
    }

    const second = await serveWithHttp3(port);
    runs.push(second.run);
    expect(existsSync(orphan)).toBe(false);
    expect(existsSync(live)).toBe(true);
    const client = await connect(second.wtUrl, { certHash: second.certHash, transport: 'h3' });
    try {
      expect(client.carrier).toBe('http/3');
      expect((await client.listOperations()).map((o) => o.name)).toContain('services/info');
    } finally {
      await client.close();
    }
  }, 60_000);
});
