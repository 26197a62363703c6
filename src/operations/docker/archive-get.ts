import type { z } from 'zod';
import { archiveGetContract, archiveStatContract } from '../../contracts/index.js';
import { defineOperation, type Operation } from '../../dispatcher/index.js';
import { archiveError, archiveRequest, statOf, TarDigest } from './archive-engine.js';
import type { DockerEngine } from './engine.js';
import { engineHead, engineStream } from './engine-request.js';
import { inspectOwned } from './ownership.js';

type GetFrame = z.input<typeof archiveGetContract.output>;

/** `docker/container/archive/stat`: the engine's HEAD of the path (ARC-3). */
export function archiveStatOperation(engine: DockerEngine, labelPrefix: string): Operation {
  return defineOperation({
    ...archiveStatContract,
    handler: async ({ containerId, path }, ctx) => {
      const { info } = await inspectOwned(engine, containerId, ctx, labelPrefix);
      const response = await engineHead(engine, archiveRequest(info.Id, path)).catch((error: unknown) => {
        throw archiveError(error, containerId, path);
      });
      return statOf(response);
    },
  });
}

/**
 * `docker/container/archive/get` (ARC-4): the stat, then the engine's tar stream itself,
 * pulled chunk by chunk under the call's credit, then its count and digest (ARC-6).
 */
export function archiveGetOperation(engine: DockerEngine, labelPrefix: string): Operation {
  return defineOperation({
    ...archiveGetContract,
    handler: async function* ({ containerId, path }, ctx): AsyncGenerator<GetFrame> {
      const { info } = await inspectOwned(engine, containerId, ctx, labelPrefix);
      // No idle timeout: a caller that reads slowly leaves the engine's answer unread as long as it likes (DOCKER-2).
      const stream = await engineStream(engine, archiveRequest(info.Id, path)).catch((error: unknown) => {
        throw archiveError(error, containerId, path);
      });
      const stop = (): void => void stream.destroy();
      // An abort that came while the engine answered must still stop it.
      if (ctx.signal.aborted) stop();
      else ctx.signal.addEventListener('abort', stop, { once: true });
      try {
        yield { stat: statOf(stream) };
        const digest = new TarDigest();
        try {
          for await (const chunk of stream as AsyncIterable<Buffer>) {
            digest.add(chunk);
            yield { data: chunk };
          }
        } catch (error) {
          throw archiveError(error, containerId, path);
        }
        if (ctx.signal.aborted) return;
        yield digest.terminal();
      } finally {
        ctx.signal.removeEventListener('abort', stop);
        stream.destroy();
      }
    },
  });
}
