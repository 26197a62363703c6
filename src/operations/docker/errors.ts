import { z } from 'zod';
import { RpcError } from '../../protocol/index.js';
import type { DeclaredError } from '../../dispatcher/index.js';
import { describeEngineError } from './engine.js';

/** The reference's declared Docker codes (spec/PROTOCOL.md §12). */
export const dockerErrors = {
  CONTAINER_NOT_FOUND: { description: 'No container with that id or name.', details: z.object({ containerId: z.string() }), httpStatus: 404 },
  DOCKER_ERROR: { description: 'The engine refused or failed the request, or is unreachable.', details: z.object({ statusCode: z.number().optional() }), httpStatus: 500 },
} as const satisfies Record<string, DeclaredError>;

export const imageErrors = {
  IMAGE_NOT_FOUND: { description: 'No image with that name or id.', details: z.object({ image: z.string() }), httpStatus: 404 },
  DOCKER_ERROR: dockerErrors.DOCKER_ERROR,
} as const satisfies Record<string, DeclaredError>;

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

export function engineError(error: unknown): RpcError {
  if (error instanceof RpcError) return error;
  const e = error as EngineError;
  if (e.statusCode === undefined) {
    return new RpcError('DOCKER_ERROR', `Docker engine unreachable: ${describeEngineError(error)}`, { retryable: true, details: {} });
  }
  return new RpcError('DOCKER_ERROR', engineMessage(e), { details: { statusCode: e.statusCode } });
}
