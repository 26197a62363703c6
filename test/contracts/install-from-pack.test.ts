import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { fencedBlocks } from '../support/markdown.js';

const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, '../..');

/**
 * callwire is not on the npm registry yet: a project of one's own installs the tarball
 * `npm pack` makes (README). This does exactly that, outside the clone, from the
 * npm cache the clone's install filled, and runs the README's server snippet there, as a
 * reader would: imports by package name, types from the package's own declarations.
 */
describe('callwire installed from npm pack into a project outside the clone', () => {
  const dir = mkdtempSync(join(tmpdir(), 'callwire-consumer-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("installs, and the README's server snippet runs there and exits 0; npx callwire --version answers", async () => {
    const { stdout: packed } = await run('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', dir], { cwd: ROOT, maxBuffer: 64 * 1024 * 1024 });
    const tarball = join(dir, (JSON.parse(packed) as { filename: string }[])[0]!.filename);
    const project = join(dir, 'consumer');
    await run('mkdir', ['-p', project]);
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string>; devDependencies: Record<string, string> };
    await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', tarball, `zod@${pkg.dependencies['zod']}`, `tsx@${pkg.devDependencies['tsx']}`], { cwd: project, timeout: 300_000, maxBuffer: 64 * 1024 * 1024 });

    // The WebTransport library comes inside the tarball with this repository's patches (its
    // capsule bounds among them): a consumer's install of the registry's copy would lack them.
    const bundled = join(project, 'node_modules/callwire/node_modules/@fails-components/webtransport/lib/http2/node/capsuleparser.js');
    expect(readFileSync(bundled, 'utf8')).toContain('callwire patch');

    const snippet = fencedBlocks(readFileSync(join(ROOT, 'README.md'), 'utf8')).find((block) => block.lang === 'ts' && /startServer\(/.test(block.body))!;
    writeFileSync(join(project, 'greet.ts'), `${snippet.body}\nexport {};\n`);
    const { stdout } = await run(join(project, 'node_modules/.bin/tsx'), ['greet.ts'], { cwd: project, timeout: 60_000 });
    expect(stdout).toMatch(/^ws:\/\/127\.0\.0\.1:\d+\/callwire https:\/\/127\.0\.0\.1:\d+\/callwire\nhello ada \(local\)\n$/);

    const { stdout: version } = await run('npx', ['--no-install', 'callwire', '--version'], { cwd: project, timeout: 60_000 });
    expect(version.trim()).toBe(JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version);
  }, 420_000);
});
