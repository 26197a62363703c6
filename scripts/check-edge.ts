// Type-checks the HTTP/3 edge (edge/quic-edge.ts) with the Deno that runs it: tsc does not know Deno's types.
import { execFileSync } from 'node:child_process';
import { findDeno } from '../src/transports/index.js';

const deno = findDeno();
if ('reason' in deno) {
  console.log(`edge type check skipped: ${deno.reason}`);
} else {
  execFileSync(deno.path, ['check', '--quiet', '--unstable-net', '--no-config', 'edge/quic-edge.ts'], { stdio: 'inherit', env: { ...process.env, NO_COLOR: '1' } });
}
