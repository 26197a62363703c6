// Type-checks the HTTP/3 edges (edge/h3-server-edge.ts for the server, edge/h3-client-edge.ts for clients) with the Deno that runs it: tsc does not know Deno's types.
import { execFileSync } from 'node:child_process';
import { findDeno } from '../src/webtransport/index.js';

const deno = await findDeno();
if ('reason' in deno) {
  console.log(`edge type check skipped: ${deno.reason}`);
} else {
  execFileSync(deno.path, ['check', '--quiet', '--unstable-net', '--no-config', '--sloppy-imports', 'edge/h3-server-edge.ts', 'edge/h3-client-edge.ts'], { stdio: 'inherit', env: { ...process.env, NO_COLOR: '1' } });
}
