import { execFile, execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { resolve } from 'node:path';
import { promisify } from 'node:util';

const ROOT = resolve(import.meta.dirname, '../..');
const ENGINE_SCRIPT = 'scripts/docker-engine.sh';
const run = promisify(execFile);

/** Why a private engine cannot start here, or undefined when it can (dockerd needs root). */
export const privateEngineMissing: string | undefined = process.getuid?.() !== 0 ? 'not root here: a Docker engine of its own needs root' : undefined;

/**
 * A Docker engine of a test's (or the bench's) own beside the shared one: scripts/docker-engine.sh
 * (the one home of how an engine starts, as npm run fleet's second engine does) under a root
 * of its own, so its socket, state, exec root and containers are nobody else's and files
 * running side by side never meet in it. It listens on its unix socket only (no TCP port),
 * and touches no host network (the script's --bridge=none --iptables=false). Its image is
 * the script's: callwire-test:busybox imported from busybox-static, never pulled.
 */
export class PrivateEngine {
  /** Short: containerd's sockets live under it, and a unix socket's path has 108 bytes at most. */
  readonly root = `/tmp/cwe-${randomUUID().slice(0, 8)}`;

  get socketPath(): string {
    return `${this.root}/docker.sock`;
  }

  get dockerHost(): string {
    return `unix://${this.socketPath}`;
  }

  /** Starts dockerd and imports the test image; resolves once both are there. */
  async up(): Promise<void> {
    await run('bash', [ENGINE_SCRIPT, 'up'], { cwd: ROOT, env: this.env(), timeout: 180_000 });
  }

  /** Stops dockerd and removes its root (containers, images, mounts); safe to call when it never started. */
  down(): void {
    execFileSync('bash', [ENGINE_SCRIPT, 'down'], { cwd: ROOT, env: this.env(), stdio: 'ignore' });
  }

  private env(): NodeJS.ProcessEnv {
    return { ...process.env, CALLWIRE_DOCKER_ROOT: this.root, DOCKER_HOST: this.dockerHost };
  }
}
