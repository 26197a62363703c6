import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

/**
 * After heavy use dockerd spends its first tens of seconds removing the network sandboxes
 * its last run left, and answers nothing meanwhile. scripts/docker-engine.sh (npm start,
 * npm run fleet, the tests) says so once the wait is long, instead of waiting in silence.
 * A stand-in dockerd on PATH logs what the real one logs then, and never answers.
 */
const dir = mkdtempSync(join(tmpdir(), 'callwire-slow-engine-'));
afterAll(() => {
  try {
    process.kill(Number(readFileSync(join(dir, 'engine', 'dockerd.pid'), 'utf8')), 'SIGKILL');
  } catch {
    // it was never started, or is gone
  }
  rmSync(dir, { recursive: true, force: true });
});

describe('scripts/docker-engine.sh up, while dockerd removes stale sandboxes', () => {
  it('says dockerd is removing the stale sandboxes of its last run, how many so far, and how long it waits', async () => {
    const bin = join(dir, 'bin');
    mkdirSync(bin);
    writeFileSync(
      join(bin, 'dockerd'),
      `#!/usr/bin/env bash
while [ $# -gt 0 ]; do [ "$1" = --pidfile ] && echo $$ > "$2"; shift; done
for i in 1 2 3; do echo "level=info msg=\\"Removing stale sandbox sb$i (container$i)\\""; done
exec sleep 60
`,
    );
    chmodSync(join(bin, 'dockerd'), 0o755);
    const env = { ...process.env, PATH: `${bin}:${process.env['PATH']}`, CALLWIRE_DOCKER_ROOT: join(dir, 'engine'), CALLWIRE_DOCKERD_WAIT_S: '7' };
    const up = spawn('bash', ['scripts/docker-engine.sh', 'up'], { env, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    up.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => up.on('exit', resolve));
    expect(stderr).toMatch(/\[docker-engine\] dockerd is removing the stale network sandboxes its last run left \(3 so far\); after heavy use this takes up to a minute \(waiting up to 7 s\)/);
    expect(stderr).toMatch(/dockerd did not answer \/_ping within 7 s; its log:/);
    expect(code).toBe(1);
  });
});
