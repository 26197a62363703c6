import { z } from 'zod';
import type { DeclaredError } from './contract.js';

/** The reference's declared Docker codes (spec/PROTOCOL.md §12). */
export const dockerErrors = {
  CONTAINER_NOT_FOUND: { description: 'No container with that id or name.', details: z.object({ containerId: z.string() }), httpStatus: 404 },
  DOCKER_ERROR: { description: 'The engine refused or failed the request, or is unreachable.', details: z.object({ statusCode: z.number().optional() }), httpStatus: 500 },
} as const satisfies Record<string, DeclaredError>;

export const imageErrors = {
  IMAGE_NOT_FOUND: { description: 'No image with that name or id.', details: z.object({ image: z.string() }), httpStatus: 404 },
  DOCKER_ERROR: dockerErrors.DOCKER_ERROR,
} as const satisfies Record<string, DeclaredError>;
