import { z } from 'zod';
import { dockerErrors, imageErrors } from './docker-errors.js';
import { imageReference } from './engine-references.js';
import { placed } from './placement.js';

const imageName = z.strictObject({ image: imageReference });

/** One row of an image list. */
export const imageSummary = z.object({ id: z.string(), tags: z.array(z.string()), size: z.number(), created: z.number() });

export const imageListContract = placed({
  name: 'docker/image/list',
  kind: 'query',
  description: 'Images on the engine.',
  input: z.null(),
  output: z.object({ images: z.array(imageSummary) }),
  errors: { DOCKER_ERROR: dockerErrors.DOCKER_ERROR },
  access: { requiredScopes: ['image:list'], resourceType: 'image', resourceAction: 'list' },
  placement: { kind: 'every-host', rows: 'images', row: imageSummary },
});

export const imageInspectContract = placed({
  name: 'docker/image/inspect',
  kind: 'query',
  description: "The engine's inspect document for one image.",
  input: imageName,
  output: z.record(z.string(), z.unknown()),
  errors: imageErrors,
  access: { requiredScopes: ['image:inspect'], resourceType: 'image', resourceAction: 'inspect', resourceIdPath: 'image' },
  placement: { kind: 'host' },
});

export const pullContract = placed({
  name: 'docker/image/pull',
  kind: 'subscription',
  description: "Pulls an image, streaming the engine's progress frames.",
  input: imageName,
  output: z.object({ status: z.string(), id: z.string().optional(), progress: z.string().optional() }),
  errors: {
    IMAGE_PULL_FAILED: { description: 'The engine could not pull the image.', details: z.object({ image: z.string() }), httpStatus: 502 },
    DOCKER_ERROR: dockerErrors.DOCKER_ERROR,
  },
  access: { requiredScopes: ['image:pull'], resourceType: 'image', resourceAction: 'pull', resourceIdPath: 'image' },
  placement: { kind: 'host' },
});
