import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { cliPath, runCli, type CliRun } from '../support/cli.js';
import { DockerFixture, dockerHost } from '../support/docker.js';
import { Tmux } from '../support/tmux.js';

/**
 * `callwire exec -it` in a real terminal (tmux), as a person uses it: keys typed,
 * the window resized, the shell left with an exit code, and the terminal's mode
 * the same afterwards, also when the server dies under it or the CLI is told to
 * stop. The server is a separate `callwire serve` process, so it can be killed.
 */
describe('callwire exec -it: an interactive shell in a real terminal', () => {
  const docker = new DockerFixture();
  const dir = mkdtempSync(join(tmpdir(), 'callwire-tty-'));
  let server: CliRun;
  let url = '';
  let c = '';
  let term: Tmux | undefined;

  const startServer = async (): Promise<{ run: CliRun; url: string }> => {
    const run = runCli(['serve', '--port', '0', '--no-webtransport'], { env: { DOCKER_HOST: dockerHost } });
    return { run, url: (await run.waitFor(/ws:\/\/127\.0\.0\.1:\d+\/callwire/, 'stdout')).trim() };
  };
  /** Starts `exec -it <c> sh` in a fresh 100×30 terminal, saving `stty -g` before and after, and the exit code. */
  const session = async (serverUrl: string, name: string, flags = ''): Promise<Tmux> => {
    term = new Tmux(100, 30);
    const state = join(dir, name);
    term.type(`stty -g > ${state}.before; '${process.execPath}' '${cliPath}' --url ${serverUrl} exec ${flags} -it ${c} sh; echo "EXIT=$?"; stty -g > ${state}.after; echo DONE`);
    await term.waitFor(/^\/ #\s*$/m);
    return term;
  };
  const sameMode = (name: string): void => {
    const before = readFileSync(join(dir, `${name}.before`), 'utf8');
    expect(before).toMatch(/:/); // a real saved mode, not an empty file
    expect(readFileSync(join(dir, `${name}.after`), 'utf8')).toBe(before);
  };

  beforeAll(async () => {
    ({ run: server, url } = await startServer());
    c = await docker.container();
  });
  afterEach(() => term?.kill());
  afterAll(async () => {
    server.child.kill('SIGTERM');
    await server.exited;
    await docker.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  it('echo $((6*7)) prints 42; stty size follows the window; exit 5 is the CLI’s exit code; the terminal mode is restored', async () => {
    const t = await session(url, 'normal');
    t.type('echo $((6*7))');
    await t.waitFor(/^42\r?$/m);
    t.type('stty size');
    await t.waitFor(/^30 100\r?$/m);
    t.resize(120, 40);
    // The shell redraws its prompt on SIGWINCH: wait for the new size to have crossed before asking.
    await new Promise((resolve) => setTimeout(resolve, 300));
    t.type('stty size');
    await t.waitFor(/^40 120\r?$/m);
    t.type('exit 5');
    await t.waitFor(/^DONE$/m);
    expect(t.screen()).toMatch(/^EXIT=5$/m);
    sameMode('normal');
    await expect.poll(() => docker.processes(c)).toEqual(['sleep 1000000']);
  });

  it('Ctrl-C is a key for the remote terminal: it interrupts the remote cat, and the session goes on', async () => {
    const t = await session(url, 'ctrl-c');
    t.type('cat');
    await expect.poll(() => docker.processes(c)).toContain('cat');
    t.keys('C-c');
    await expect.poll(() => docker.processes(c)).not.toContain('cat');
    t.type('echo still here');
    await t.waitFor(/^still here\r?$/m);
    t.type('exit');
    await t.waitFor(/^DONE$/m);
    expect(t.screen()).toMatch(/^EXIT=0$/m);
    sameMode('ctrl-c');
  });

  it('the server killed mid-session: the CLI tries to resume for its grace, then ends with 123 and gives the terminal back as it was', async () => {
    const own = await startServer();
    const t = await session(own.url, 'killed', '--resume 1');
    t.type('echo alive');
    await t.waitFor(/^alive\r?$/m);
    own.run.child.kill('SIGKILL');
    await t.waitFor(/^DONE$/m);
    expect(t.screen()).toMatch(/^callwire: connection lost; reconnecting \(the call is kept for 1 s\)…\r?$/m);
    expect(t.screen()).toMatch(/^Error: the connection was lost and the call could not be resumed within its 1 s grace \(UNAVAILABLE\)$/m);
    expect(t.screen()).toMatch(/^EXIT=123$/m);
    sameMode('killed');
    // The engine keeps the orphaned shell; the next test needs a quiet container.
    await docker.engine.docker.getContainer(c).restart({ t: 0 });
  });

  it('SIGTERM to the CLI mid-session: the remote shell is killed, the CLI ends with 130, the terminal mode is restored', async () => {
    const t = await session(url, 'sigterm');
    await expect.poll(() => docker.processes(c)).toContain('sh');
    // The CLI runs inside tmux's bash, not as our child: found by its command line.
    execFileSync('pkill', ['-TERM', '-f', `exec -it ${c} sh`]);
    await t.waitFor(/^DONE$/m);
    expect(t.screen()).toMatch(/^EXIT=130$/m);
    sameMode('sigterm');
    await expect.poll(() => docker.processes(c)).toEqual(['sleep 1000000']);
  });

  it('-t without -i: a terminal for the output only; stdout and stderr arrive merged, with the terminal’s line ends', async () => {
    const run = runCli(['--url', url, 'exec', '-t', c, '--', 'sh', '-c', '[ -t 1 ] && echo on a tty; echo err >&2; exit 4'], { stdin: 'ignore' });
    expect((await run.exited).code).toBe(4);
    expect(run.stdout).toBe('on a tty\r\nerr\r\n');
    expect(run.stderr).toBe('');
  });

  it('-it with stdin that is not a terminal is refused before anything runs, as docker exec refuses it', async () => {
    const run = runCli(['--url', url, 'exec', '-it', c, '--', 'sh', '-c', 'touch /tmp/ran']);
    run.child.stdin.end('echo hi\n');
    expect((await run.exited).code).toBe(121);
    expect(run.stderr).toMatch(/the input device is not a TTY/);
    expect(await docker.processes(c)).toEqual(['sleep 1000000']);
  });
});
