import type { Registry } from '../../dispatcher/index.js';
import { dockerOperations, probeDocker, type DockerEngine } from '../../operations/index.js';

export interface DockerOptions {
  /** A Docker engine whose operations to offer (`dockerEngine()` finds one as the docker CLI does); none by default. */
  readonly docker?: DockerEngine | false;
}

/** Whether the Docker operations are on, and why (not). */
export interface DockerStatus {
  readonly on: boolean;
  readonly reason: string;
}

/** Offers a local engine's operations when it answers; a library user's server offers only what it was given. */
export async function startDockerEngine(options: DockerOptions, registry: Registry): Promise<{ status: DockerStatus; engine: DockerEngine | undefined }> {
  const engine = options.docker === false ? undefined : options.docker;
  if (engine === undefined) return { status: { on: false, reason: 'not asked for (pass docker: dockerEngine())' }, engine: undefined };
  const probe = await probeDocker(engine);
  if (!probe.ok) return { status: { on: false, reason: probe.reason }, engine: undefined };
  registry.register(...dockerOperations(engine));
  return { status: { on: true, reason: probe.reason }, engine };
}
