/** The container the exec scenarios run in: made on first use, removed at the end. */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { DOCKER_CLI } from './subjects/cli-process.js';

// The project's own engine (scripts/docker-engine.sh) when DOCKER_HOST names none, as the tests do.
const PROJECT_SOCKET = '/tmp/callwire-docker/docker.sock';
if (!process.env['DOCKER_HOST'] && existsSync(PROJECT_SOCKET)) process.env['DOCKER_HOST'] = `unix://${PROJECT_SOCKET}`;

export class BenchContainer {
  private id: string | undefined;

  get(): string {
    if (this.id) return this.id;
    const run = spawnSync(DOCKER_CLI, ['run', '-d', '--network', 'none', '--label', 'callwire.bench=1', 'callwire-test:busybox', 'sleep', '100000'], { encoding: 'utf8' });
    if (run.status !== 0) throw new Error(`docker run failed: ${run.stderr.trim()}`);
    this.id = run.stdout.trim();
    return this.id;
  }

  remove(): void {
    if (this.id) spawnSync(DOCKER_CLI, ['rm', '-f', this.id]);
    this.id = undefined;
  }
}
