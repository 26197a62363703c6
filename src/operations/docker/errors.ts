import { RpcError } from '../../protocol/index.js';
import { describeEngineError } from './engine.js';
import { EngineTimeout } from './engine-agent.js';

export { dockerErrors, imageErrors } from '../../contracts/index.js';

interface EngineError {
  statusCode?: number;
  code?: string;
  json?: { message?: string } | null;
  message?: string;
}

/** The engine's own message, without dockerode's "(HTTP code …)" wrapping. */
function engineMessage(error: EngineError): string {
  return (error.json?.message ?? error.message ?? String(error)).replace(/^\(HTTP code \d+\) [^-]*- /, '').trim();
}

/**
 * An engine error about a registry, without what the registry sent: the engine quotes a
 * body it could not parse, and a caller may have pointed the pull at a server inside
 * the network (spec §12). Bounded, so a long answer is not relayed either.
 */
export function registryMessage(message: string): string {
  const cut = message.replace(/(response body):[\s\S]*$/, '$1 (not shown)');
  return cut.length > 300 ? `${cut.slice(0, 300)}…` : cut;
}

/** Turns an engine failure into a declared error, for an operation about `containerId`. */
export function containerError(error: unknown, containerId: string): RpcError {
  const e = error as EngineError;
  if (e.statusCode === 404 && /container/i.test(engineMessage(e))) {
    return new RpcError('CONTAINER_NOT_FOUND', `no such container: ${containerId}`, { details: { containerId } });
  }
  return engineError(error);
}

export function imageError(error: unknown, image: string): RpcError {
  const e = error as EngineError;
  if (e.statusCode === 404) return new RpcError('IMAGE_NOT_FOUND', `no such image: ${image}`, { details: { image } });
  return engineError(error);
}

/** The engine client never follows a redirect (engine-agent.ts): one fails the call. 304 (already in that state) is no redirect. */
export function isRedirect(statusCode: number | undefined): boolean {
  return statusCode !== undefined && statusCode >= 300 && statusCode < 400 && statusCode !== 304;
}

/**
 * Errors of this process running out of something (descriptors, memory, local ports)
 * on its way to the engine: the engine never saw the request, so the refusal is the
 * server's, not the engine's (docs/security.md "Connections and callers": UNAVAILABLE, not DOCKER_ERROR).
 */
const EXHAUSTED = new Set(['EMFILE', 'ENFILE', 'ENOMEM', 'ENOBUFS', 'EADDRNOTAVAIL', 'EAGAIN']);

export function engineError(error: unknown): RpcError {
  if (error instanceof RpcError) return error;
  const e = error as EngineError;
  if (e.statusCode === undefined && e.code !== undefined && EXHAUSTED.has(e.code)) {
    return RpcError.of('UNAVAILABLE', `the server is out of resources to reach the Docker engine (${e.code}); try again later`);
  }
  if (error instanceof EngineTimeout) return new RpcError('DOCKER_ERROR', error.message, { retryable: true, details: {} });
  if (e.statusCode === undefined) {
    return new RpcError('DOCKER_ERROR', `Docker engine unreachable: ${describeEngineError(error)}`, { retryable: true, details: {} });
  }
  if (isRedirect(e.statusCode)) {
    return new RpcError('DOCKER_ERROR', `the engine answered ${e.statusCode}, a redirect, which is never followed`, { details: { statusCode: e.statusCode } });
  }
  return new RpcError('DOCKER_ERROR', engineMessage(e), { details: { statusCode: e.statusCode } });
}
