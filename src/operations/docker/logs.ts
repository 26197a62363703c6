import { logsContract } from '../../contracts/index.js';
import { defineOperation, type Operation } from '../../dispatcher/index.js';
import { DockerDemuxer } from './demux.js';
import type { DockerEngine } from './engine.js';
import { engineStream } from './engine-request.js';
import { containerError } from './errors.js';
import { inspectOwned } from './ownership.js';

/** Characters of one log line per frame: far below maxFrameBytes even at 4 UTF-8 bytes each. */
const MAX_LINE_CHARS = 256 * 1024;

/** `docker/container/logs`: one frame per line, `{stream, timestamp, text}`; follow keeps going. */
export function logsOperation(engine: DockerEngine, labelPrefix: string): Operation {
  return defineOperation({
    ...logsContract,
    handler: async function* ({ containerId, follow, tail }, ctx) {
      const { info } = await inspectOwned(engine, containerId, ctx, labelPrefix);
      // Followed or not, the log is the engine's response itself, pulled under the call's credit: never
      // buffered whole (a log can be as large as a container writes), never timed out while quiet (DOCKER-2).
      const query = { stdout: true, stderr: true, timestamps: true, follow, tail };
      const stream = await engineStream(engine, { path: `/containers/${encodeURIComponent(info.Id)}/logs`, query }).catch((error: unknown) => {
        throw containerError(error, containerId);
      });
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
        for (const text of linePieces(line)) {
          yield { stream: piece.stream, timestamp: st.lineStamp ?? '', text };
          st.lineStamp = '';
        }
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

/**
 * Lines of a TTY container's log: one raw stream, each line starting with its timestamp.
 * A line over MAX_LINE_CHARS goes out in pieces (LIM-1), the later ones with an empty
 * timestamp: what is held for a line without its end is bounded (DOCKER-2).
 */
export async function* ttyLines(source: AsyncIterable<Buffer>): AsyncGenerator<LogLine> {
  const decoder = new TextDecoder();
  let partial = '';
  let continued = false; // the line in `partial` began in a piece already sent
  for await (const chunk of source) {
    const parts = (partial + decoder.decode(chunk, { stream: true })).split('\n');
    partial = parts.pop() ?? '';
    for (const line of parts) {
      for (const text of linePieces(line)) {
        yield continued ? { stream: 'stdout', timestamp: '', text } : toFrame('stdout', text);
        continued = true;
      }
      continued = false;
    }
    while (partial.length > MAX_LINE_CHARS) {
      const piece = partial.slice(0, MAX_LINE_CHARS);
      yield continued ? { stream: 'stdout', timestamp: '', text: piece } : toFrame('stdout', piece);
      partial = partial.slice(MAX_LINE_CHARS);
      continued = true;
    }
  }
  if (partial.length > 0) yield continued ? { stream: 'stdout', timestamp: '', text: partial } : toFrame('stdout', partial);
}

/** A whole line in pieces of at most MAX_LINE_CHARS (LIM-1): a chunk can hold a line's end and far more than a piece of it. */
function* linePieces(line: string): Generator<string> {
  while (line.length > MAX_LINE_CHARS) {
    yield line.slice(0, MAX_LINE_CHARS);
    line = line.slice(MAX_LINE_CHARS);
  }
  yield line;
}

function toFrame(stream: 'stdout' | 'stderr', line: string) {
  // With timestamps on, every line starts "2006-01-02T15:04:05.999999999Z ".
  const space = line.indexOf(' ');
  return space > 0 ? { stream, timestamp: line.slice(0, space), text: line.slice(space + 1) } : { stream, timestamp: '', text: line };
}
