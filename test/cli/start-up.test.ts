import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { cliPath } from '../support/cli.js';

const PROBE = fileURLToPath(new URL('../support/loaded-packages.mjs', import.meta.url));
/** The CLI's modules as tsc built them: the bundle (cliPath) splits its chunks where these import one another lazily. */
const MODULES = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));

/** What the built CLI (`entry`) loaded to answer `args`: npm packages, and every file as a URL. */
async function loadedBy(args: string[], entry = MODULES): Promise<{ packages: string[]; files: string[]; stdout: string }> {
  const { stdout } = await promisify(execFile)(process.execPath, [PROBE, entry, '--', ...args], { timeout: 60_000 });
  const lines = stdout.split('\n');
  const loaded = JSON.parse(lines.at(-1)!) as { packages: string[]; files: string[] };
  return { ...loaded, stdout: lines.slice(0, -1).join('\n') };
}

/** Our own built modules among `files`, as paths under dist/ (cli/main.js, client/index.js, …). */
const ours = (files: string[]): string[] => files.filter((f) => f.includes('/dist/') && !f.includes('/node_modules/')).map((f) => f.split('/dist/').at(-1)!);

/** The server's, the fleet's and the conformance suite's heavy packages: no client command needs one. */
const SERVER_PACKAGES = ['dockerode', 'docker-modem', 'prom-client', '@nats-io/transport-node', '@nats-io/nats-core', '@peculiar/x509', 'ws'];

describe('a CLI process loads only what its command needs (docs/cli.md "Start-up")', () => {
  it('--version loads nothing of ours beyond the entry: no client, no schema library', async () => {
    const { packages, files, stdout } = await loadedBy(['--version']);
    expect(stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
    expect(ours(files).sort()).toEqual(['cli/defaults.js', 'cli/main.js', 'cli/operands.js']);
    expect(packages).toEqual(['commander']);
  });

  for (const command of ['exec', 'cp', 'call', 'subscribe', 'ops']) {
    it(`${command} --help loads the client, and none of the server, the fleet, the suite or rxjs's whole index`, async () => {
      const { packages, files, stdout } = await loadedBy([command, '--help']);
      expect(stdout).toContain(`Usage: callwire ${command}`);
      const layers = new Set(ours(files).map((f) => f.split('/')[0]!));
      expect(layers).toContain('client');
      expect([...layers].filter((l) => ['server', 'fleet', 'conformance', 'operations', 'transports', 'dispatcher'].includes(l))).toEqual([]);
      expect(packages.filter((p) => SERVER_PACKAGES.includes(p))).toEqual([]);
      // rxjs's package entry in Node loads all of rxjs; src/rx takes its classes file by file.
      expect(files.filter((f) => /\/rxjs\/dist\/cjs\/index\.js$/.test(f))).toEqual([]);
    });
  }

  it('serve --help loads neither the suite nor the fleet nor the engine client nor metrics: serve loads its server when it runs, and the fleet only with --nats', async () => {
    const { packages, files, stdout } = await loadedBy(['serve', '--help']);
    expect(stdout).toContain('Usage: callwire serve');
    const layers = new Set(ours(files).map((f) => f.split('/')[0]!));
    expect(layers).not.toContain('conformance');
    expect(layers).not.toContain('fleet');
    expect(packages.filter((p) => SERVER_PACKAGES.includes(p) || p.startsWith('@nats-io/'))).toEqual([]);
  });

  it('the bin is the bundle, split the same way: --version reads two of its files; exec --help no chunk of serve, agent, the server, the fleet or the suite, and from node_modules only msgpackr\'s native decoder', async () => {
    const bundled = (files: string[]): string[] => files.filter((f) => f.includes('/dist/bin/')).map((f) => f.split('/dist/bin/').at(-1)!);
    const version = await loadedBy(['--version'], cliPath);
    expect(version.stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
    expect(version.files.filter((f) => !f.startsWith('node:'))).toHaveLength(2);
    expect(version.packages).toEqual([]);
    const exec = await loadedBy(['exec', '--help'], cliPath);
    expect(exec.stdout).toContain('Usage: callwire exec');
    expect(bundled(exec.files)).toContain('callwire.js');
    expect(bundled(exec.files).filter((f) => /^(serve|agent|server|fleet|conformance)-/.test(f))).toEqual([]);
    expect(exec.packages.filter((p) => !/msgpackr-extract|^node-gyp-build-optional-packages$|^detect-libc$/.test(p))).toEqual([]);
  });

  it("the bin before the bundle (tsc's entry) still runs as a program: npx's cache of a clone and `npm link` keep the bin they first linked", async () => {
    const { stdout } = await promisify(execFile)(MODULES, ['--version'], { timeout: 60_000 });
    expect(stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
  });

  it('--help still lists every command, and an unknown one still gets its suggestion', async () => {
    const { stdout } = await loadedBy(['--help']);
    for (const command of ['serve', 'agent', 'ops', 'schema', 'call', 'subscribe', 'exec', 'cp', 'conformance']) expect(stdout).toMatch(new RegExp(`^  ${command}\\b`, 'm'));
    expect(stdout).toContain('Exit codes (call | exec)');
    const typo = await promisify(execFile)(process.execPath, [cliPath, 'exce']).catch((error: { code: number; stderr: string }) => error);
    expect(typo).toMatchObject({ code: 6 });
    expect((typo as { stderr: string }).stderr).toContain('(Did you mean exec?)');
  });
});
