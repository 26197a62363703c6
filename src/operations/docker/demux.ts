/**
 * Docker's multiplexed stream format for non-TTY execs and logs: each frame is an
 * 8-byte header (stream type, three zero bytes, big-endian 32-bit size), then the
 * payload. Incremental: any chunking of the input yields the same frames.
 */
import { concatBytes } from '../../protocol/index.js';

export interface DemuxedFrame {
  readonly stream: 'stdout' | 'stderr';
  readonly data: Uint8Array;
  /** This piece begins an engine frame (for logs: a log record, which begins with its timestamp). */
  readonly start?: boolean;
}

const HEADER = 8;

export class DockerDemuxer {
  private header = new Uint8Array(HEADER);
  private headerFilled = 0;
  private remaining = 0;
  private stream: 'stdout' | 'stderr' = 'stdout';
  private starting = false;

  push(chunk: Uint8Array): DemuxedFrame[] {
    const out: DemuxedFrame[] = [];
    let at = 0;
    while (at < chunk.byteLength) {
      if (this.remaining === 0) {
        const take = Math.min(HEADER - this.headerFilled, chunk.byteLength - at);
        this.header.set(chunk.subarray(at, at + take), this.headerFilled);
        this.headerFilled += take;
        at += take;
        if (this.headerFilled < HEADER) break;
        this.headerFilled = 0;
        const type = this.header[0];
        if (type !== 1 && type !== 2) throw new Error(`unexpected stream type ${String(type)} in the engine's output`);
        this.stream = type === 1 ? 'stdout' : 'stderr';
        this.remaining = new DataView(this.header.buffer).getUint32(4, false);
        this.starting = true;
        continue;
      }
      const take = Math.min(this.remaining, chunk.byteLength - at);
      // A view, not a copy: each chunk a Node socket hands out is its own buffer.
      out.push({ stream: this.stream, data: chunk.subarray(at, at + take), ...(this.starting ? { start: true } : {}) });
      this.starting = false;
      this.remaining -= take;
      at += take;
    }
    return out;
  }

  /** True when the input ended exactly on a frame boundary. */
  get clean(): boolean {
    return this.remaining === 0 && this.headerFilled === 0;
  }
}

/**
 * Joins runs of frames of the same stream (from one socket read) into one, so a
 * busy command costs fewer, larger protocol frames. Order is unchanged: only
 * neighbours of the same stream are joined.
 */
export function mergeAdjacent(frames: readonly DemuxedFrame[]): DemuxedFrame[] {
  const out: DemuxedFrame[] = [];
  let run: DemuxedFrame[] = [];
  const flush = (): void => {
    if (run.length === 0) return;
    if (run.length === 1) out.push(run[0]!);
    else out.push({ stream: run[0]!.stream, data: concatBytes(run.map((f) => f.data)) });
    run = [];
  };
  for (const frame of frames) {
    if (run.length > 0 && run[0]!.stream !== frame.stream) flush();
    run.push(frame);
  }
  flush();
  return out;
}
