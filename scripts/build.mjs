// `npm run build`, and the test suite's build: the compiled code, the Lab's bundle, and the
// CLI's bundle, dist/bin/callwire.js, made executable as npm does for an installed package's
// bin (`npx callwire` in a clone runs it). `--no-check` emits without the type check (half
// the time), for the test suite: CI checks the types in a step of its own.
import { execFileSync } from 'node:child_process';
import { chmodSync, readFileSync, rmSync } from 'node:fs';
import { build } from 'esbuild';

const check = process.argv.includes('--no-check') ? ['--noCheck'] : [];
execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json', ...check], { stdio: 'inherit' });
execFileSync(process.execPath, ['scripts/build-lab.mjs'], { stdio: 'inherit' });

// The CLI as one file and a chunk per command (each loaded only when its command runs): a
// process that starts by resolving and reading ~300 modules one by one spends half its CPU on
// it (bench/PROFILE.md "CLI start"). Chunks sit two levels deep, as dist/cli/*.js do, so the
// paths the code finds beside itself (../../package.json, ../../edge/, ../../spec/) hold.
// Left to node_modules: what loads only in `serve` or `agent` and only with its feature (or
// is native), and what the code already loads through `createRequire` itself.
rmSync('dist/bin', { recursive: true, force: true });
await build({
  entryPoints: { callwire: 'dist/cli/main.js' },
  outdir: 'dist/bin',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  external: ['@nats-io/*', '@fails-components/*', '@peculiar/x509', 'reflect-metadata', 'dockerode', 'prom-client', 'msgpackr-extract', 'deno'],
  // The CommonJS packages bundled (commander, ws) require Node's own modules.
  banner: { js: "import { createRequire as __callwireRequire } from 'node:module'; const require = __callwireRequire(import.meta.url);" },
  logLevel: 'warning',
});
chmodSync(JSON.parse(readFileSync('package.json', 'utf8')).bin.callwire, 0o755);
// The bin before the bundle, tsc's entry module: what npx's cache of a clone (keyed by its path)
// and `npm link` still run where they first ran callwire before it, as neither looks at package.json's
// bin again. Executable, it keeps working there; tsc writes a new file without the bit.
chmodSync('dist/cli/main.js', 0o755);
