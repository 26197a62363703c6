// `npm run build`, and the test suite's build: the compiled code, the Lab's bundle, and
// the CLI's file made executable, as npm does for an installed package's bin (`npx
// callwire` in a clone runs dist/cli/main.js itself). `--no-check` emits without the type
// check (half the time), for the test suite: CI checks the types in a step of its own.
import { execFileSync } from 'node:child_process';
import { chmodSync } from 'node:fs';

const check = process.argv.includes('--no-check') ? ['--noCheck'] : [];
execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json', ...check], { stdio: 'inherit' });
execFileSync(process.execPath, ['scripts/build-lab.mjs'], { stdio: 'inherit' });
chmodSync('dist/cli/main.js', 0o755);
