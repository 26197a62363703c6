import type { Agent } from 'node:http';
import { createRequire } from 'node:module';
import type Docker from 'dockerode';
import { engineAgent } from './engine-agent.js';

/** dockerode hands its options to docker-modem, which takes the pool too (its types do not say so). */
type EngineOptions = Docker.DockerOptions & { agent: Agent };

export interface DockerEngine {
  /** The engine's client; a container or image a caller names goes through `container` or `image`. */
  readonly docker: Docker;
  /** The container a caller names (spec §12, DOCKER-1), its reference one encoded path segment. */
  container(reference: string): Docker.Container;
  /** The image a caller names, its reference one encoded path segment. */
  image(reference: string): Docker.Image;
  /** Where the engine is, for messages: `unix:///var/run/docker.sock`, `tcp://…`. */
  readonly address: string;
  /** True when the engine's process ids are this host's (a local unix socket). */
  readonly local: boolean;
  /**
   * Execs killed because their call ended before their command did, and those kills that
   * failed (spec §12, EXEC-5); services/stats reports the failures, /metrics both.
   */
  readonly counters: { execKills: number; execKillFailures: number };
  /**
   * The most of one engine answer the server reads whole (spec §12, DOCKER-2): an
   * inspect document, one element of a list, and a list's rows as an operation keeps
   * them. Logs are never read whole: they stream under the call's credit.
   */
  readonly maxAnswerBytes: number;
}

/** DOCKER-2's bound by default: what one output frame may carry (maxFrameBytes), which an inspect document must fit in anyway. */
export const DEFAULT_MAX_ANSWER_BYTES = 16 * 1024 * 1024;

/**
 * How long the engine has to answer a request (docker-modem's timeout, an idle timeout
 * on the socket): streams that may be quiet or wait for a caller lift it
 * (engine-request.ts). The engine answers nothing about a container while a put into it
 * runs (it holds the container), so a request that waits behind a slow copy ends here.
 */
export const ENGINE_TIMEOUT_MS = 60_000;

/** Finds the engine through DOCKER_HOST, or the default socket (what the docker CLI does); `timeoutMs` for a test that waits less. */
export function dockerEngine(dockerHost: string | undefined = process.env['DOCKER_HOST'], options: { timeoutMs?: number } = {}): DockerEngine {
  const timeout = options.timeoutMs ?? ENGINE_TIMEOUT_MS;
  const address = dockerHost && dockerHost.length > 0 ? dockerHost : 'unix:///var/run/docker.sock';
  if (address.startsWith('unix://')) {
    const socketPath = address.slice('unix://'.length);
    return engineOf({ socketPath, timeout, agent: engineAgent('http') }, address, true);
  }
  const url = new URL(address.replace(/^tcp:/, 'http:'));
  const protocol = url.protocol === 'https:' ? 'https' : 'http';
  return engineOf({ host: url.hostname, port: Number(url.port || 2375), protocol, timeout, agent: engineAgent(protocol) }, address, false);
}

function engineOf(options: EngineOptions, address: string, local: boolean): DockerEngine {
  // dockerode (and its gRPC and SSH dependencies) is loaded by the first engine made, not by importing the operations.
  const Dockerode = createRequire(import.meta.url)('dockerode') as typeof Docker;
  const docker = new Dockerode(options);
  return {
    docker,
    // dockerode pastes a reference into the path as it is: encoded, it stays one segment.
    container: (reference) => docker.getContainer(encodeURIComponent(reference)),
    image: (reference) => docker.getImage(encodeURIComponent(reference)),
    address,
    local,
    counters: { execKills: 0, execKillFailures: 0 },
    maxAnswerBytes: DEFAULT_MAX_ANSWER_BYTES,
  };
}

/** Whether the engine answers, within `timeoutMs`; the reason when it does not. */
export async function probeDocker(engine: DockerEngine, timeoutMs = 3000): Promise<{ ok: boolean; reason: string }> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    await Promise.race([
      engine.docker.ping(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
      }),
    ]);
    const version = await engine.docker.version();
    return { ok: true, reason: `Docker Engine ${version.Version} at ${engine.address}` };
  } catch (error) {
    return { ok: false, reason: `no Docker engine at ${engine.address}: ${describeEngineError(error)}` };
  } finally {
    clearTimeout(timer);
  }
}

export function describeEngineError(error: unknown): string {
  const e = error as { code?: string; message?: string };
  if (e.code === 'ENOENT') return 'the socket does not exist';
  if (e.code === 'ECONNREFUSED') return 'connection refused';
  if (e.code === 'EACCES') return 'permission denied on the socket';
  return (e.message ?? String(error)).trim();
}
