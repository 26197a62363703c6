import type { Readable } from 'node:stream';
import type Docker from 'dockerode';
import { imageInspectContract, imageListContract, pullContract } from '../../contracts/index.js';
import { defineOperation, type Operation } from '../../dispatcher/index.js';
import { RpcError } from '../../protocol/index.js';
import type { DockerEngine } from './engine.js';
import { engineJson, engineList, withoutIdleTimeout } from './engine-request.js';
import { engineError, imageError, isRedirect, registryMessage } from './errors.js';

const MAX_PULL_LINE_CHARS = 1024 * 1024;

/** `docker/image/list`, `inspect` and `pull` (spec §12). */
export function imageOperations(engine: DockerEngine): Operation[] {
  const docker = engine.docker;
  return [
    defineOperation({
      ...imageListContract,
      handler: async () => {
        // Row by row, bounded (DOCKER-2), as the container list.
        const images = await engineList(engine, { path: '/images/json' }, 'the image list', (i: Docker.ImageInfo) => ({ id: i.Id, tags: i.RepoTags ?? [], size: i.Size, created: i.Created })).catch(
          (error: unknown) => {
            throw engineError(error);
          },
        );
        return { images };
      },
    }),
    defineOperation({
      ...imageInspectContract,
      // Read up to maxAnswerBytes (DOCKER-2): an image's labels and history are as large as its builder liked.
      handler: async ({ image }) =>
        engineJson<Record<string, unknown>>(engine, { path: `/images/${encodeURIComponent(image)}/json` }, engine.maxAnswerBytes, `image ${image}`).catch((error: unknown) => {
          throw imageError(error, image);
        }),
    }),
    defineOperation({
      ...pullContract,
      handler: async function* ({ image }, ctx) {
        const pullFailed = (message: string): RpcError => new RpcError('IMAGE_PULL_FAILED', `pull of ${image} failed: ${registryMessage(message)}`, { details: { image } });
        const stream = (await docker.pull(image).catch((error: { statusCode?: number; json?: { message?: string }; message?: string }) => {
          if (error.statusCode === undefined || isRedirect(error.statusCode)) throw engineError(error);
          throw pullFailed(error.json?.message ?? error.message ?? 'unknown');
        })) as Readable;
        // A layer can take minutes to extract without a progress line: no idle timeout on the stream (DOCKER-2).
        withoutIdleTimeout(stream);
        const stop = (): void => void stream.destroy();
        ctx.signal.addEventListener('abort', stop, { once: true });
        try {
          let buffered = '';
          for await (const chunk of stream as AsyncIterable<Buffer>) {
            const lines = (buffered + chunk.toString('utf8')).split('\n');
            buffered = lines.pop() ?? '';
            // The engine's progress lines are short; one without its end is not held without bound (DOCKER-2).
            if (buffered.length > MAX_PULL_LINE_CHARS) throw pullFailed('the engine sent a progress line over 1 Mi characters');
            for (const line of lines.filter((l) => l.trim())) {
              const event = JSON.parse(line) as { status?: string; id?: string; progress?: string; error?: string };
              if (event.error) throw pullFailed(event.error);
              yield { status: event.status ?? '', ...(event.id ? { id: event.id } : {}), ...(event.progress ? { progress: event.progress } : {}) };
            }
          }
        } finally {
          ctx.signal.removeEventListener('abort', stop);
          stream.destroy();
        }
      },
    }),
  ];
}
