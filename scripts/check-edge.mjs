// Type-checks the HTTP/3 edge (edge/quic-edge.ts) with the Deno that runs it: tsc does not know Deno's types.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const require = createRequire(import.meta.url);
const candidates = ['deno', `@deno/${process.platform}-${process.arch === 'arm64' ? 'arm64' : 'x64'}-glibc`].flatMap((pkg) => {
  try {
    return [join(dirname(require.resolve(`${pkg}/package.json`)), 'deno')];
  } catch {
    return [];
  }
});
const deno = candidates.find((path) => existsSync(path));
if (!deno) {
  console.log('edge type check skipped: the optional dependency deno is not installed');
} else {
  execFileSync(deno, ['check', '--quiet', '--unstable-net', '--no-config', 'edge/quic-edge.ts'], { stdio: 'inherit', env: { ...process.env, NO_COLOR: '1' } });
}
