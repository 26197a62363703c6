import { Readable } from 'node:stream';
import { z } from 'zod';
import { defineOperation, type Operation } from '../../dispatcher/index.js';
import { DockerDemuxer } from './demux.js';
import type { DockerEngine } from './engine.js';
import { containerError, dockerErrors } from './errors.js';
import { inspectOwned } from './ownership.js';

/** `docker/container/logs`: one frame per line, `{stream, timestamp, text}`; follow keeps going. */
export function logsOperation(engine: DockerEngine, labelPrefix: string): Operation {
  return defineOperation({
    name: 'docker/container/logs',
    kind: 'subscription',
    description: 'A container log, one frame per line; follow streams new lines until the container stops or the call is aborted.',
    input: z.strictObject({ containerId: z.string().min(1), follow: z.boolean().default(false), tail: z.number().int().min(0).optional() }),
    output: z.object({ stream: z.enum(['stdout', 'stderr']), timestamp: z.string(), text: z.string() }),
    errors: dockerErrors,
    access: { requiredScopes: ['container:logs'], resourceType: 'container', resourceAction: 'logs', resourceIdPath: 'containerId' },
    handler: async function* ({ containerId, follow, tail }, ctx) {
      const container = engine.docker.getContainer(containerId);
      const info = await inspectOwned(engine, containerId, ctx.identity, labelPrefix);
      const options = { stdout: true, stderr: true, timestamps: true, ...(tail === undefined ? {} : { tail }) };
      const stream = (await (follow ? container.logs({ ...options, follow: true }) : container.logs({ ...options, follow: false }).then((buffer) => Readable.from([buffer]))).catch(
        (error: unknown) => {
          throw containerError(error, containerId);
        },
      )) as Readable;
      const stop = (): void => void stream.destroy();
      ctx.signal.addEventListener('abort', stop, { once: true });
      try {
        const demux = new DockerDemuxer();
        const partial = { stdout: '', stderr: '' };
        const decoders = { stdout: new TextDecoder(), stderr: new TextDecoder() };
        for await (const chunk of stream as AsyncIterable<Buffer>) {
          for (const frame of info.Config.Tty ? [{ stream: 'stdout' as const, data: new Uint8Array(chunk) }] : demux.push(chunk)) {
            const lines = (partial[frame.stream] + decoders[frame.stream].decode(frame.data, { stream: true })).split('\n');
            partial[frame.stream] = lines.pop() ?? '';
            for (const line of lines) yield toFrame(frame.stream, line);
          }
        }
        for (const s of ['stdout', 'stderr'] as const) if (partial[s].length > 0) yield toFrame(s, partial[s]);
      } finally {
        ctx.signal.removeEventListener('abort', stop);
        stream.destroy();
      }
    },
  });
}

function toFrame(stream: 'stdout' | 'stderr', line: string) {
  // With timestamps on, every line starts "2006-01-02T15:04:05.999999999Z ".
  const space = line.indexOf(' ');
  return space > 0 ? { stream, timestamp: line.slice(0, space), text: line.slice(space + 1) } : { stream, timestamp: '', text: line };
}
