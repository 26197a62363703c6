import type Docker from 'dockerode';
import { containerAccess, containerName, containerReference, envEntry, imageReference, inspectContract } from '../../contracts/index.js';
import { z } from 'zod';
import { defineOperation, type CallContext, type Operation } from '../../dispatcher/index.js';
import type { DockerEngine } from './engine.js';
import { engineList } from './engine-request.js';
import { containerError, dockerErrors, engineError, imageError, imageErrors } from './errors.js';
import { inspectOwned, ownershipLabels } from './ownership.js';


const summary = z.object({
  id: z.string(),
  names: z.array(z.string()),
  image: z.string(),
  state: z.string(),
  status: z.string(),
  labels: z.record(z.string(), z.string()),
  created: z.number(),
});

const access = containerAccess;

/** list, inspect, create, start, stop, restart, remove (spec §12, reference surface). */
export function containerOperations(engine: DockerEngine, labelPrefix: string): Operation[] {
  const labels = ownershipLabels(labelPrefix);
  const docker = engine.docker;

  const owned = (id: string, ctx: CallContext) => inspectOwned(engine, id, ctx, labelPrefix);

  const lifecycle = (action: 'start' | 'stop' | 'restart', run: (container: Docker.Container, timeoutSeconds: number) => Promise<unknown>, description: string): Operation =>
    defineOperation({
      name: `docker/container/${action}`,
      kind: 'mutation',
      description,
      input: z.strictObject({ containerId: containerReference, timeoutSeconds: z.number().int().min(0).max(3600).default(10) }),
      output: z.object({ containerId: z.string(), state: z.string() }),
      errors: dockerErrors,
      access: access(action),
      handler: async ({ containerId: id, timeoutSeconds }, ctx) => {
        const { info, container } = await owned(id, ctx);
        await run(container, timeoutSeconds).catch((error: { statusCode?: number }) => {
          if (error.statusCode === 304) return; // already in that state
          throw containerError(error, id);
        });
        const after = await owned(info.Id, ctx);
        return { containerId: after.info.Id, state: after.info.State.Status };
      },
    });

  return [
    defineOperation({
      name: 'docker/container/list',
      kind: 'query',
      description: 'Containers, running or not; owned_only keeps those this caller created through callwire.',
      input: z.strictObject({ all: z.boolean().default(true), owned_only: z.boolean().default(false) }).nullable(),
      output: z.object({ containers: z.array(summary) }),
      errors: { DOCKER_ERROR: dockerErrors.DOCKER_ERROR },
      access: { requiredScopes: ['container:list'], resourceType: 'container', resourceAction: 'list' },
      handler: async (input, ctx) => {
        const filters: Record<string, string[]> = {};
        if (input?.owned_only) filters['label'] = [`${labels.owner}=${ctx.identity?.subject ?? ''}`];
        // Row by row as the engine sends them, bounded (DOCKER-2): a list is as long as the engine's containers.
        const query = { all: input?.all ?? true, filters: JSON.stringify(filters) };
        const containers = await engineList(engine, { path: '/containers/json', query }, 'the container list', (c: Docker.ContainerInfo) => ({
          id: c.Id,
          names: c.Names,
          image: c.Image,
          state: c.State,
          status: c.Status,
          labels: c.Labels ?? {},
          created: c.Created,
        })).catch((error: unknown) => {
          throw engineError(error);
        });
        return { containers };
      },
    }),
    defineOperation({ ...inspectContract, handler: async ({ containerId: id }, ctx) => (await owned(id, ctx)).info as unknown as Record<string, unknown> }),
    defineOperation({
      name: 'docker/container/create',
      kind: 'mutation',
      description: 'Creates a container. The server writes its ownership labels itself; callers cannot set them.',
      input: z.strictObject({
        image: imageReference,
        cmd: z.array(z.string()).optional(),
        env: z.array(envEntry).optional(),
        labels: z.record(z.string(), z.string()).optional(),
        name: containerName.optional(),
      }),
      output: z.object({ containerId: z.string() }),
      errors: { ...dockerErrors, IMAGE_NOT_FOUND: imageErrors.IMAGE_NOT_FOUND },
      access: { requiredScopes: ['container:create'], resourceType: 'container', resourceAction: 'create' },
      handler: async (input, ctx) => {
        const created = await docker
          .createContainer({
            Image: input.image,
            ...(input.cmd ? { Cmd: input.cmd } : {}),
            ...(input.env ? { Env: input.env } : {}),
            ...(input.name ? { name: input.name } : {}),
            // Ours last: a caller's own "callwire.owner" cannot survive (no spoofing).
            Labels: { ...input.labels, [labels.managed]: 'true', [labels.owner]: ctx.identity?.subject ?? 'anonymous' },
          })
          .catch((error: { statusCode?: number }) => {
            throw error.statusCode === 404 ? imageError(error, input.image) : engineError(error);
          });
        return { containerId: created.id };
      },
    }),
    lifecycle('start', (c) => c.start(), 'Starts a container.'),
    lifecycle('stop', (c, t) => c.stop({ t }), 'Stops a container: SIGTERM, then SIGKILL after timeoutSeconds (default 10).'),
    lifecycle('restart', (c, t) => c.restart({ t }), 'Restarts a container (stop as above, then start).'),
    defineOperation({
      name: 'docker/container/remove',
      kind: 'mutation',
      description: 'Removes a container; force also removes a running one.',
      input: z.strictObject({ containerId: containerReference, force: z.boolean().default(false) }),
      output: z.object({ containerId: z.string(), removed: z.literal(true) }),
      errors: dockerErrors,
      access: access('remove'),
      handler: async ({ containerId: id, force }, ctx) => {
        const { info, container } = await owned(id, ctx);
        await container
          .remove({ force })
          .catch((error: unknown) => {
            throw containerError(error, id);
          });
        return { containerId: info.Id, removed: true as const };
      },
    }),
  ];
}

