import { execFileSync } from 'node:child_process';

/** Tests spawn the real CLI from dist/: build it once before any test runs. */
export default function setup(): void {
  execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json'], { stdio: 'inherit' });
}
