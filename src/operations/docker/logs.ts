import { Readable } from 'node:stream';
import { z } from 'zod';
import { containerReference } from '../../contracts/index.js';
import { defineOperation, type Operation } from '../../dispatcher/index.js';
import { DockerDemuxer } from './demux.js';
import type { DockerEngine } from './engine.js';
import { containerError, dockerErrors } from './errors.js';
import { inspectOwned } from './ownership.js';

/** Characters of one log line per frame: far below maxFrameBytes even at 4 UTF-8 bytes each. */
const MAX_LINE_CHARS = 256 * 1024;

/** `docker/container/logs`: one frame per line, `{stream, timestamp, text}`; follow keeps going. */
export function logsOperation(engine: DockerEngine, labelPrefix: string): Operation {
  return defineOperation({
    name: 'docker/container/logs',
    kind: 'subscription',
    description:
      'A container log, one frame per line (a line over 256 Ki characters is split; its later pieces have an empty timestamp); ' +
      'follow streams new lines until the container stops or the call is aborted.',
    input: z.strictObject({ containerId: containerReference, follow: z.boolean().default(false), tail: z.number().int().min(0).optional() }),
    output: z.object({ stream: z.enum(['stdout', 'stderr']), timestamp: z.string(), text: z.string() }),
    errors: dockerErrors,
    access: { requiredScopes: ['container:logs'], resourceType: 'container', resourceAction: 'logs', resourceIdPath: 'containerId' },
    handler: async function* ({ containerId, follow, tail }, ctx) {
      const { info, container } = await inspectOwned(engine, containerId, ctx, labelPrefix);
      const options = { stdout: true, stderr: true, timestamps: true, ...(tail === undefined ? {} : { tail }) };
      const stream = (await (follow ? container.logs({ ...options, follow: true }) : container.logs({ ...options, follow: false }).then((buffer) => Readable.from([buffer]))).catch(
        (error: unknown) => {
          throw containerError(error, containerId);
        },
      )) as Readable;
      const stop = (): void => void stream.destroy();
      // An abort that came while the engine opened the log must still stop it.
      if (ctx.signal.aborted) stop();
      else ctx.signal.addEventListener('abort', stop, { once: true });
      try {
        const lines = info.Config.Tty ? ttyLines(stream as AsyncIterable<Buffer>) : recordLines(stream as AsyncIterable<Buffer>);
        for await (const line of lines) yield line;
      } finally {
        ctx.signal.removeEventListener('abort', stop);
        stream.destroy();
      }
    },
  });
}

type Stream = 'stdout' | 'stderr';
interface LogLine {
  stream: Stream;
  timestamp: string;
  text: string;
}

/**
 * Lines of a non-TTY log. The engine sends records, each "TIMESTAMP text" in one
 * multiplexed frame; a line longer than its log driver's buffer (16 KiB) comes as
 * several records, each with a timestamp of its own, and only the last ends in a
 * newline. A line keeps its first record's timestamp; the others are dropped, not
 * pasted into the text. A line over MAX_LINE_CHARS goes out in pieces (LIM-1), the
 * later ones with an empty timestamp.
 */
async function* recordLines(source: AsyncIterable<Buffer>): AsyncGenerator<LogLine> {
  const demux = new DockerDemuxer();
  const state = { stdout: newState(), stderr: newState() };
  for await (const chunk of source) {
    for (const piece of demux.push(chunk)) {
      const st = state[piece.stream];
      if (piece.start) {
        st.inTimestamp = true;
        st.stamp = '';
      }
      let text = st.decoder.decode(piece.data, { stream: true });
      if (st.inTimestamp) {
        const space = text.indexOf(' ');
        if (space < 0) {
          st.stamp += text;
          continue;
        }
        st.stamp += text.slice(0, space);
        text = text.slice(space + 1);
        st.inTimestamp = false;
        st.lineStamp ??= st.stamp;
      }
      const parts = (st.partial + text).split('\n');
      st.partial = parts.pop() ?? '';
      for (const line of parts) {
        yield { stream: piece.stream, timestamp: st.lineStamp ?? '', text: line };
        st.lineStamp = undefined;
      }
      while (st.partial.length > MAX_LINE_CHARS) {
        yield { stream: piece.stream, timestamp: st.lineStamp ?? '', text: st.partial.slice(0, MAX_LINE_CHARS) };
        st.partial = st.partial.slice(MAX_LINE_CHARS);
        st.lineStamp = '';
      }
    }
  }
  for (const s of ['stdout', 'stderr'] as const) {
    if (state[s].partial.length > 0) yield { stream: s, timestamp: state[s].lineStamp ?? '', text: state[s].partial };
  }
}

function newState() {
  return { decoder: new TextDecoder(), inTimestamp: false, stamp: '', lineStamp: undefined as string | undefined, partial: '' };
}

/** Lines of a TTY container's log: one raw stream, each line starting with its timestamp. */
async function* ttyLines(source: AsyncIterable<Buffer>): AsyncGenerator<LogLine> {
  const decoder = new TextDecoder();
  let partial = '';
  for await (const chunk of source) {
    const parts = (partial + decoder.decode(chunk, { stream: true })).split('\n');
    partial = parts.pop() ?? '';
    for (const line of parts) yield toFrame('stdout', line);
  }
  if (partial.length > 0) yield toFrame('stdout', partial);
}

function toFrame(stream: 'stdout' | 'stderr', line: string) {
  // With timestamps on, every line starts "2006-01-02T15:04:05.999999999Z ".
  const space = line.indexOf(' ');
  return space > 0 ? { stream, timestamp: line.slice(0, space), text: line.slice(space + 1) } : { stream, timestamp: '', text: line };
}
