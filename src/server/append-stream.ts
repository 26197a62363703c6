import { createWriteStream, type WriteStream } from 'node:fs';
import type { Writable } from 'node:stream';
import type { Logger } from '../dispatcher/index.js';

/**
 * An append-only file (or stdout) that calls write to as they go: the stream
 * buffers, so no call waits for the disk. What it holds unwritten is bounded (a
 * stalled disk must not take the server's memory); past the bound, and after a
 * write error, writes are refused. Each of those is logged once; none ends the server.
 */
export class AppendStream {
  private failed = false;
  private dropped = 0;

  private constructor(
    private readonly out: Writable,
    private readonly what: string,
    private readonly maxBufferedBytes: number,
    private readonly logger: Logger,
    /** Whether close() ends the stream (a file) or only waits for it to drain (stdout). */
    private readonly owned: boolean,
  ) {
    // A stream emits one error, then is destroyed: this is logged once.
    out.on('error', (error: Error) => {
      this.failed = true;
      logger.error(`${what}: write failed; nothing more is written to it`, { error: error.message });
    });
  }

  /** A new file, mode 0600, opened without waiting; an existing file is never overwritten (its open fails, logged). */
  static create(path: string, what: string, maxBufferedBytes: number, logger: Logger): AppendStream {
    const out: WriteStream = createWriteStream(path, { flags: 'wx', mode: 0o600 });
    return new AppendStream(out, what, maxBufferedBytes, logger, true);
  }

  /** The process's stdout, which close() leaves open. */
  static stdout(what: string, maxBufferedBytes: number, logger: Logger): AppendStream {
    return new AppendStream(process.stdout, what, maxBufferedBytes, logger, false);
  }

  /** Bytes queued and not yet written. */
  get pending(): number {
    return this.out.writableLength;
  }

  /** Queues `text`; false when it was refused (the stream failed, or holds its bound unwritten). */
  write(text: string): boolean {
    if (this.failed || this.out.destroyed) return false;
    if (this.out.writableLength + text.length > this.maxBufferedBytes) {
      if (this.dropped++ === 0) this.logger.warn(`${this.what}: the disk falls behind; writes are refused while ${this.maxBufferedBytes} bytes wait`);
      return false;
    }
    this.out.write(text);
    return true;
  }

  /** Writes what is queued and closes the file; never rejects. */
  close(): Promise<void> {
    const out = this.out;
    if (this.failed || out.destroyed) return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => resolve();
      out.once('error', done);
      if (this.owned) out.end(done);
      else if (out.writableLength === 0) resolve();
      else out.once('drain', done);
    });
  }
}
