import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { posix } from 'node:path';
import semver from 'semver';
import { describe, expect, it } from 'vitest';

/** What `npm pack` would publish, asked of npm itself. */
function packedFiles(): string[] {
  const out = execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { encoding: 'utf8' });
  return (JSON.parse(out) as { files: { path: string }[] }[])[0]!.files.map((f) => f.path);
}

describe('the published package', () => {
  it('holds the Deno edge programs HTTP/3 runs (src/webtransport/deno.ts finds them beside dist/), and every file they import, at any depth (the bridge and the flow primitives from src/ too)', () => {
    const files = packedFiles();
    const edge = readdirSync('edge').filter((name) => name.endsWith('.ts'));
    // Deno runs them from source with --sloppy-imports: src/'s `.js` specifiers name the `.ts` beside them.
    const queue = edge.map((name) => `edge/${name}`);
    const seen = new Set<string>();
    for (let file = queue.shift(); file !== undefined; file = queue.shift()) {
      if (seen.has(file)) continue;
      seen.add(file);
      expect(files).toContain(file);
      for (const [, imported] of readFileSync(file, 'utf8').matchAll(/from '(\.\.?\/[^']+)'/g)) {
        const target = posix.join(posix.dirname(file), imported!);
        queue.push(existsSync(target) ? target : target.replace(/\.js$/, '.ts'));
      }
    }
    expect(seen).toContain('src/flow/credit-window.ts');
    expect(edge).toEqual(expect.arrayContaining(['h3-server-edge.ts', 'h3-client-edge.ts']));
    expect(files).toContain('dist/bin/callwire.js');
  });

  it('runs nothing at a consumer\'s install that needs a devDependency (patch-package patches this repository only, from prepare)', () => {
    const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { scripts: Record<string, string>; devDependencies: Record<string, string> };
    const devOnly = new Set(Object.keys(pkg.devDependencies));
    for (const hook of ['preinstall', 'install', 'postinstall']) {
      const command = pkg.scripts[hook];
      if (command === undefined) continue;
      for (const word of command.split(/\s*(?:&&|\|\||;)\s*/).map((part) => part.trim().split(/\s+/)[0]!)) expect(devOnly.has(word), `${hook} runs ${word}`).toBe(false);
    }
    expect(pkg.scripts['prepare']).toBe('patch-package');
  });

  it('depends only on packages its published code imports: what is bundled at build time (the Lab\'s xterm.js) is a devDependency', () => {
    const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { dependencies: Record<string, string>; devDependencies: Record<string, string> };
    // dist/lab is the Lab's bundle: the packages in it were inlined by the build and are not loaded at run time.
    const runtime = packedFiles().filter((path) => path.startsWith('dist/') && !path.startsWith('dist/lab/') && path.endsWith('.js'));
    const imported = new Set(runtime.flatMap((path) => packagesImportedBy(readFileSync(path, 'utf8'))));
    for (const name of Object.keys(pkg.dependencies)) expect(imported.has(name), `${name} is a dependency, but no published file imports it`).toBe(true);
    const bundled = readdirSync('src/lab').filter((name) => name.endsWith('.ts')).flatMap((name) => packagesImportedBy(readFileSync(`src/lab/${name}`, 'utf8')));
    const buildTimeOnly = bundled.filter((name) => !imported.has(name));
    expect(buildTimeOnly).toEqual(expect.arrayContaining(['@xterm/xterm', '@xterm/addon-fit']));
    for (const name of buildTimeOnly) expect(Object.keys(pkg.devDependencies), `${name} is bundled into the Lab`).toContain(name);
  });
});

/** The npm packages a module imports, statically or dynamically (not node: builtins, not relative paths). */
function packagesImportedBy(source: string): string[] {
  const names: string[] = [];
  // A package loaded when first used, by createRequire, counts as imported too.
  for (const [, spec] of source.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+|\bcreateRequire\(import\.meta\.url\)\(\s*)['"]([^'"]+)['"]/g)) {
    if (spec!.startsWith('.') || spec!.startsWith('node:')) continue;
    const parts = spec!.split('/');
    names.push(spec!.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]!);
  }
  return names;
}

describe('the Node.js the package says it runs on', () => {
  it('is admitted by every package installed with it: no EBADENGINE at install (an override pins @nats-io/nuid to a release that runs on Node 20)', () => {
    const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { engines: { node: string } };
    const lock = JSON.parse(readFileSync('package-lock.json', 'utf8')) as { packages: Record<string, { engines?: { node?: string } | string[] }> };
    const lowest = semver.minVersion(pkg.engines.node)!.version;
    const refusing = Object.entries(lock.packages)
      .filter(([path, entry]) => path !== '' && !Array.isArray(entry.engines) && entry.engines?.node !== undefined && !semver.satisfies(lowest, entry.engines.node))
      .map(([path, entry]) => `${path} wants node ${(entry.engines as { node: string }).node}`);
    expect(refusing, `the project says node ${pkg.engines.node}`).toEqual([]);
  });
});
