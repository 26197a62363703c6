import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';

const PROJECT_SOCKET = '/tmp/callwire-docker/docker.sock';

/**
 * Before the first file of a project that needs them (`integration`, `serial`; test/projects.ts):
 * build dist/ (tests spawn the real CLI), and make sure a Docker engine answers. Without
 * DOCKER_HOST, the project's own engine is started (scripts/docker-engine.sh, as root), so
 * `npm test` needs nothing set up by hand. Both projects call this; the work is done once.
 * CALLWIRE_TEST_DIST_BUILT=1 says dist/ is already built for this run (.ci/run builds it
 * beside lint and the type check).
 */
export default function setup(): void {
  if (process.env['CALLWIRE_TEST_DIST_BUILT'] !== '1') {
    // Types are checked by `npm run check:types`; the tests need only the emitted code.
    execFileSync(process.execPath, ['scripts/build.mjs', '--no-check'], { stdio: 'inherit' });
    // The projects' global setups run in this one process, and so do their workers' parents.
    process.env['CALLWIRE_TEST_DIST_BUILT'] = '1';
  }
  if (process.env['DOCKER_HOST']) return;
  if (process.getuid?.() === 0 || existsSync(PROJECT_SOCKET)) {
    execFileSync('bash', ['scripts/docker-engine.sh', 'up'], { stdio: ['ignore', 'ignore', 'inherit'] });
  }
  // Forked test workers inherit this.
  process.env['DOCKER_HOST'] = `unix://${PROJECT_SOCKET}`;
}
