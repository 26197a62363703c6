import { createHash } from 'node:crypto';
import { expect, onTestFailed } from 'vitest';
import { execFrames, RpcError, type Client } from '../../src/client/index.js';
import type { CliRun } from './cli.js';
import { dockerCli, type DockerFixture } from './docker.js';
import type { Fleet } from './fleet.js';
import { within } from './wait.js';

/** The exec the failure tests run through the fleet: 14.9 MB of output, then exit 7. */
export const LONG_EXEC = 'seq 1 2000000; exit 7';

/** A running container of `docker`'s, and what `docker exec` of LONG_EXEC prints in it: the reference a fleet's output is held to. */
export async function longExecReference(docker: DockerFixture): Promise<{ name: string; direct: string }> {
  const id = await docker.container();
  const name = (await docker.engine.docker.getContainer(id).inspect()).Name.replace(/^\//, '');
  const run = await dockerCli(['exec', name, 'sh', '-c', LONG_EXEC]);
  if (run.code !== 7) throw new Error(`docker exec of the reference ended ${run.code}, not 7`);
  return { name, direct: run.stdout.toString('latin1') };
}

export const sha256 = (data: string | Buffer): string => createHash('sha256').update(data).digest('hex');

// The fleet's failure tests take it from here too; its home is wait.ts.
export { within };

/**
 * An exec (`LONG_EXEC` through the CLI) that met a failure its call outlives (a lost
 * message, a NATS node, a link cut under the down threshold): docs/fleet.md promises that
 * replay fills the gap, so it ends byte for byte what `docker exec` printed, with the
 * command's exit code; never UNAVAILABLE, never truncated. A failure the call does not
 * outlive (its host down, its agent killed) is asserted as UNAVAILABLE where it happens.
 */
export async function completeAfterResume(run: CliRun, direct: string, what: string): Promise<void> {
  const { code } = await within(run.exited, 60_000, what);
  expect(code, `${what}: the exec resumed and ended with the command's exit code; stderr=${run.stderr.slice(-300)}`).toBe(7);
  expect(run.stdout.length, `${what}: stdout size`).toBe(direct.length);
  expect(sha256(run.stdout), `${what}: stdout sha256`).toBe(sha256(direct));
}

/** Runs `echo` in `ref` through a gateway with the SDK; the ms from `since` to its first byte of output. */
export async function firstByteAfter(client: Client, ref: string, since: number): Promise<number> {
  const frames = execFrames(client, ref, ['echo', 'after'], { encoding: 'binary' });
  let firstMs = -1;
  let out = '';
  for (let step = await frames.next(); ; step = await frames.next()) {
    if (step.done) {
      expect(step.value.exitCode).toBe(0);
      break;
    }
    if ('data' in step.value) {
      if (firstMs < 0) firstMs = Date.now() - since;
      out += Buffer.from(step.value.data).toString('utf8');
    }
  }
  expect(out).toBe('after\n');
  return firstMs;
}

/**
 * Calls `echo` until one succeeds within `boundMs` of `since` (each failure must be
 * UNAVAILABLE, never wrong output); `strict`: the first must. The ms from `since` to
 * the first byte of the one that succeeded, and the messages of those that failed.
 */
export async function firstSuccessAfter(client: Client, ref: string, since: number, strict: boolean, boundMs = 15_000): Promise<{ ms: number; failures: string[] }> {
  const failures: string[] = [];
  for (;;) {
    const ms = await within(firstByteAfter(client, ref, since), boundMs, 'a call after the failure').catch((e: unknown) => e);
    if (typeof ms === 'number') return { ms, failures };
    if (strict || !(ms instanceof RpcError) || ms.code !== 'UNAVAILABLE' || Date.now() - since > boundMs) throw ms;
    failures.push(ms.message);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Call in beforeEach: a failed test prints what the gateways, agents and NATS nodes logged, which says why it went the way it did. */
export function logFleetOnFailure(fleet: Fleet): void {
  onTestFailed(() => {
    for (const [i, g] of fleet.gateways.entries()) console.log(`[fleet] gateway ${i + 1} stderr:\n${g.run.stderr.slice(-4000)}`);
    for (const [host, run] of fleet.agents) console.log(`[fleet] agent ${host} stderr:\n${run.stderr.slice(-4000)}`);
    for (let node = 1; node <= fleet.cluster.urls.length; node++) console.log(`[fleet] NATS node ${node} log:\n${fleet.cluster.logOf(node)}`);
  });
}
