import type Docker from 'dockerode';
import {
  containerListContract,
  createContract,
  ownershipLabels,
  inspectContract,
  removeContract,
  restartContract,
  startContract,
  stopContract,
} from '../../contracts/index.js';
import { defineOperation, type CallContext, type Operation } from '../../dispatcher/index.js';
import type { DockerEngine } from './engine.js';
import { engineList } from './engine-request.js';
import { containerError, engineError, imageError } from './errors.js';
import { inspectOwned } from './ownership.js';

/** list, inspect, create, start, stop, restart, remove (spec §12, reference surface). */
export function containerOperations(engine: DockerEngine, labelPrefix: string): Operation[] {
  const labels = ownershipLabels(labelPrefix);
  const docker = engine.docker;

  const owned = (id: string, ctx: CallContext) => inspectOwned(engine, id, ctx, labelPrefix);

  const lifecycle = (contract: typeof startContract, run: (container: Docker.Container, timeoutSeconds: number) => Promise<unknown>): Operation =>
    defineOperation({
      ...contract,
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
      ...containerListContract,
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
      ...createContract,
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
    lifecycle(startContract, (c) => c.start()),
    lifecycle(stopContract, (c, t) => c.stop({ t })),
    lifecycle(restartContract, (c, t) => c.restart({ t })),
    defineOperation({
      ...removeContract,
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

