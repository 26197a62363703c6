import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';

const PROJECT_SOCKET = '/tmp/callwire-docker/docker.sock';

/**
 * Before any test: build dist/ (tests spawn the real CLI), and make sure a Docker
 * engine answers. Without DOCKER_HOST, the project's own engine is started
 * (scripts/docker-engine.sh, as root), so `npm test` needs nothing set up by hand.
 */
export default function setup(): void {
  execFileSync(process.execPath, ['scripts/build.mjs'], { stdio: 'inherit' });
  if (process.env['DOCKER_HOST']) return;
  if (process.getuid?.() === 0 || existsSync(PROJECT_SOCKET)) {
    execFileSync('bash', ['scripts/docker-engine.sh', 'up'], { stdio: ['ignore', 'ignore', 'inherit'] });
  }
  // Forked test workers inherit this.
  process.env['DOCKER_HOST'] = `unix://${PROJECT_SOCKET}`;
}
