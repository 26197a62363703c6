import { closeSync, constants, fstatSync, ftruncate, openSync, write } from 'node:fs';
import type { Logger } from '../dispatcher/index.js';

/** Where audit lines go: whole lines only, `false` when one was not kept. */
export interface LineSink {
  write(line: string): boolean;
  close(): Promise<void>;
}

/** The longest a write of lines is (whole lines, so a line over it goes alone). */
const MAX_BATCH_BYTES = 1024 * 1024;
/** While the file cannot be written, it is tried again on the next line, at most this often, and on this timer. */
const RETRY_MS = 1000;

/**
 * The audit log's file (`serve --audit FILE`, docs/security.md "Audit log and
 * recordings"). Audit lines outlive a disk that fills or fails: a line is written
 * whole or not at all (a short write is cut back to the last whole line), what
 * could not be written waits in memory up to `maxBacklogBytes` (lines past it are
 * counted, not kept), and the file is opened again by its path on the next line
 * after a failure. The first write that lands after a failure or a loss starts with
 * a line that says so: `{"time","audit":"resumed","failed_since","error","lost_lines"}`.
 *
 * The path is opened without following a symbolic link (O_NOFOLLOW) and must be a
 * file of this process's user: a link planted at the path, or another user's file,
 * is refused when the server starts (and on every reopen).
 */
export class AuditFile implements LineSink {
  private fd: number | undefined;
  /** The file's length after the last whole write: a torn write is cut back to it. */
  private size: number;
  private readonly queue: string[] = [];
  private queuedBytes = 0;
  private writing = false;
  /** Since when lines are not reaching the file, and why; undefined while they do. */
  private failure: { since: string; error: string } | undefined;
  /** Lines dropped since the last resumed line (the backlog was full). */
  private lost = 0;
  private lastAttempt = 0;
  private retryTimer: NodeJS.Timeout | undefined;
  /** A write cut short that could not be cut back (not a regular file): the next write starts on a fresh line. */
  private newlineGuard = false;
  private idle: (() => void) | undefined;

  private constructor(
    private readonly path: string,
    private readonly maxBacklogBytes: number,
    private readonly logger: Logger,
  ) {
    const { fd, size } = openAuditPath(path);
    this.fd = fd;
    this.size = size;
  }

  /** Opens `path` now, so a path that cannot be written, a link or another user's file stops the server before it serves. */
  static open(path: string, maxBacklogBytes: number, logger: Logger): AuditFile {
    return new AuditFile(path, maxBacklogBytes, logger);
  }

  write(line: string): boolean {
    const bytes = Buffer.byteLength(line);
    if (this.queuedBytes + bytes > this.maxBacklogBytes) {
      if (this.lost++ === 0) this.logger.warn(`the audit log ${this.path}: ${this.queuedBytes} bytes wait unwritten; lines are counted, not kept, until it catches up`);
      this.flush();
      return false;
    }
    this.queue.push(line);
    this.queuedBytes += bytes;
    this.flush();
    return true;
  }

  /** Writes what waits (one more try after a failure) and closes the file; never rejects. */
  async close(): Promise<void> {
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    if (this.failure) this.lastAttempt = 0;
    this.flush();
    if (this.writing) await new Promise<void>((resolve) => (this.idle = resolve));
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }

  private flush(): void {
    if (this.writing || this.queue.length === 0) return;
    if (this.fd === undefined && !this.reopen()) return;
    const fd = this.fd!;
    let count = 0;
    let text = this.newlineGuard ? '\n' : '';
    if (this.failure || this.lost > 0) text += this.resumedLine();
    const lost = this.lost;
    while (count < this.queue.length && (count === 0 || text.length + this.queue[count]!.length <= MAX_BATCH_BYTES)) text += this.queue[count++];
    const buffer = Buffer.from(text);
    this.writing = true;
    write(fd, buffer, 0, buffer.length, null, (error, written) => {
      this.writing = false;
      if (!error && written === buffer.length) {
        this.size += written;
        this.newlineGuard = false;
        for (const line of this.queue.splice(0, count)) this.queuedBytes -= Buffer.byteLength(line);
        this.lost -= lost;
        if (this.failure) this.logger.warn(`the audit log ${this.path}: written again`, { failedSince: this.failure.since, lostLines: lost });
        this.failure = undefined;
      } else this.failed(fd, error ? (error.code ?? error.message) : `short write (${written} of ${buffer.length} bytes)`, written > 0);
      if (this.fd !== undefined && this.queue.length > 0) this.flush();
      else if (this.idle) this.idle();
    });
  }

  private resumedLine(): string {
    const failure = this.failure;
    return `${JSON.stringify({ time: new Date().toISOString(), audit: 'resumed', ...(failure ? { failed_since: failure.since, error: failure.error } : {}), lost_lines: this.lost })}\n`;
  }

  /** A write failed or was cut short: no half line stays in the file, and the file is opened again later. */
  private failed(fd: number, reason: string, torn: boolean): void {
    if (torn) {
      ftruncate(fd, this.size, (error) => {
        if (error) this.newlineGuard = true;
        closeQuietly(fd);
      });
    } else closeQuietly(fd);
    this.fd = undefined;
    // The latest reason is the one that holds the lines back (a short write, then ENOSPC on each retry).
    if (this.failure) this.failure = { since: this.failure.since, error: reason };
    else {
      this.failure = { since: new Date().toISOString(), error: reason };
      this.logger.error(`the audit log ${this.path}: write failed; lines wait in memory (up to ${this.maxBacklogBytes} bytes) and the file is opened again on the next line`, { error: reason });
    }
    this.lastAttempt = Date.now();
    this.retryTimer ??= setTimeout(() => {
      this.retryTimer = undefined;
      this.flush();
    }, RETRY_MS).unref();
  }

  private reopen(): boolean {
    // A timer may fire a little early: it is the retry this waits for.
    if (Date.now() - this.lastAttempt < RETRY_MS - 50) return false;
    this.lastAttempt = Date.now();
    try {
      const { fd, size } = openAuditPath(this.path);
      this.fd = fd;
      this.size = size;
      return true;
    } catch (error) {
      if (this.failure) this.failure = { since: this.failure.since, error: (error as NodeJS.ErrnoException).code ?? String(error) };
      this.retryTimer ??= setTimeout(() => {
        this.retryTimer = undefined;
        this.flush();
      }, RETRY_MS).unref();
      return false;
    }
  }
}

/** Opens for appending, never through a symbolic link, and only a file of this process's user. */
function openAuditPath(path: string): { fd: number; size: number } {
  let fd: number;
  try {
    fd = openSync(path, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW, 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ELOOP') throw new Error(`the audit log ${path} is a symbolic link: it is never written through one (give the real path)`);
    throw error;
  }
  const stat = fstatSync(fd);
  const uid = process.getuid?.();
  if (uid !== undefined && stat.uid !== uid) {
    closeSync(fd);
    throw new Error(`the audit log ${path} belongs to uid ${stat.uid}, not to this process's user (uid ${uid}): refusing to append to another user's file`);
  }
  return { fd, size: stat.size };
}

function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // Already closed, or the device is gone: nothing more to do with it.
  }
}
