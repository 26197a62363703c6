import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { dockerEngine, type DockerEngine } from '../../src/server/index.js';

export const TEST_IMAGE = 'callwire-test:busybox';
export const DOCKER_CLI = '/usr/bin/docker';
/** Set by test/global-setup.ts, which starts the project's own engine when none answers. */
export const dockerHost = process.env['DOCKER_HOST'] ?? 'unix:///tmp/callwire-docker/docker.sock';
/** Containers of this test file carry this label, so nothing of ours can be missed at cleanup. */
const RUN_LABEL = 'callwire.test-run';

export interface CliResult {
  readonly code: number | null;
  readonly stdout: Buffer;
  readonly stderr: Buffer;
}

/** The docker CLI against the test engine, bytes captured exactly. */
export function dockerCli(args: string[], stdin?: Uint8Array): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(DOCKER_CLI, args, { env: { ...process.env, DOCKER_HOST: dockerHost }, stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (c: Buffer) => out.push(c));
    child.stderr.on('data', (c: Buffer) => err.push(c));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout: Buffer.concat(out), stderr: Buffer.concat(err) }));
    if (stdin) child.stdin.end(Buffer.from(stdin));
    else child.stdin.end();
  });
}

/** Containers for one test file, all removed by `cleanup()`. */
export class DockerFixture {
  readonly engine: DockerEngine;
  readonly runId = randomUUID();

  /** `host`: the engine's DOCKER_HOST, the shared test engine's unless a test has one of its own. */
  constructor(host: string = dockerHost) {
    this.engine = dockerEngine(host);
  }

  /** A running container (`sleep` as its only process) for execs. */
  async container(extraLabels: Record<string, string> = {}, cmd: string[] = ['sleep', '1000000']): Promise<string> {
    const created = await this.engine.docker.createContainer({
      Image: TEST_IMAGE,
      Cmd: cmd,
      Labels: { [RUN_LABEL]: this.runId, ...extraLabels },
      HostConfig: { NetworkMode: 'none' },
    });
    await created.start();
    return created.id;
  }

  /** Process command lines in a container, as `ps` inside it sees them (excluding ps itself). */
  async processes(containerId: string): Promise<string[]> {
    const top = await this.engine.docker.getContainer(containerId).top({ ps_args: '-eo pid,args' });
    return ((top.Processes ?? []) as string[][]).map((p) => p[1] ?? '').filter((args: string) => !args.startsWith('ps '));
  }

  ours(): Promise<string[]> {
    return this.engine.docker
      .listContainers({ all: true, filters: JSON.stringify({ label: [`${RUN_LABEL}=${this.runId}`] }) })
      .then((list) => list.map((c) => c.Id));
  }

  async cleanup(): Promise<void> {
    for (const id of await this.ours()) await this.engine.docker.getContainer(id).remove({ force: true });
  }
}

export { RUN_LABEL };
