import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

/**
 * A newcomer without root (and often without sudo) runs `npm start` or `npm run fleet` on a
 * machine where no engine runs: each says in one line that it must run as root, and how,
 * instead of failing at the first command that needs it.
 */
const nobody = ['--reuid=65534', '--regid=65534', '--clear-groups'];
const empty = mkdtempSync(join(tmpdir(), 'callwire-as-root-'));
chmodSync(empty, 0o777); // nobody writes its logs and HOME here
afterAll(() => rmSync(empty, { recursive: true, force: true }));

/** Runs a command as nobody in its own process group until `pattern` shows on stderr or it exits; then stops the group. */
function asNobody(command: string[], env: NodeJS.ProcessEnv, pattern: RegExp): Promise<{ stderr: string; code: number | null }> {
  const child = spawn('setpriv', [...nobody, ...command], { env, stdio: ['ignore', 'ignore', 'pipe'], detached: true });
  let stderr = '';
  return new Promise((resolve) => {
    const stop = (code: number | null): void => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // the group is gone already
      }
      resolve({ stderr, code });
    };
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      if (pattern.test(stderr)) stop(null);
    });
    // 'close', not 'exit': a command that fails at once may exit before its stderr is read.
    child.on('close', (code) => stop(code));
  });
}

const baseEnv = (): NodeJS.ProcessEnv => {
  const env: NodeJS.ProcessEnv = { ...process.env, CALLWIRE_DOCKER_ROOT: join(empty, 'engine'), HOME: empty };
  delete env['DOCKER_HOST'];
  return env;
};

describe('npm start and npm run fleet, run without root where nothing runs yet', () => {
  it('npm start says the engine needs root: run npm start as root, sudo where it is installed', async () => {
    const { stderr } = await asNobody([process.execPath, 'scripts/start.mjs', '--port', '0', '--wt-port', '0'], baseEnv(), /docker: off/);
    expect(stderr).toMatch(/docker: off\. No engine answers .* starting one needs root: run {2}npm start {2}as root \(sudo npm start, where sudo is installed\)/);
  });

  it('npm run fleet stops before starting anything and says it must run as root', async () => {
    const env = { ...baseEnv(), CALLWIRE_NATS_PORT: '1', CALLWIRE_FLEET_LOGS: join(empty, 'logs') };
    const { stderr, code } = await asNobody(['bash', 'scripts/demo-fleet.sh'], env, /stopped: [^\n]*\n/);
    expect(stderr).toMatch(/\[npm run fleet\] the NATS cluster \(port 1\) is not running, and starting it needs root: run {2}npm run fleet {2}as root \(sudo npm run fleet, where sudo is installed\)/);
    if (code !== null) expect(code).toBe(1);
    expect(stderr).toMatch(/stopped: nothing/);
  });
});
