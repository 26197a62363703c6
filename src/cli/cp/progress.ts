import { humanSize } from './sizes.js';

const REDRAW_MS = 250;

/**
 * The line of stderr a copy's progress is drawn on, in place, on a terminal only (a pipe
 * or a file gets nothing, as docker cp's). Whatever else is written to stderr clears it
 * first: the last line, an error, a lost connection's notice.
 */
export class StatusLine {
  private drawn = false;

  constructor(readonly shown: boolean) {}

  draw(text: string): void {
    if (!this.shown) return;
    process.stderr.write(`\r\x1b[2K${text}`);
    this.drawn = true;
  }

  clear(): void {
    if (this.drawn) process.stderr.write('\r\x1b[2K');
    this.drawn = false;
  }
}

/** A copy's progress on its StatusLine: bytes, rate and, when the total is known, time left. */
export class Progress {
  private bytes = 0;
  private readonly started = Date.now();
  private drawnAt = 0;

  constructor(
    private readonly line: StatusLine,
    private readonly verb: string,
    private readonly total?: number,
  ) {}

  add(bytes: number): void {
    this.bytes += bytes;
    if (!this.line.shown) return;
    const now = Date.now();
    if (now - this.drawnAt < REDRAW_MS) return;
    this.drawnAt = now;
    this.draw(now);
  }

  /** Clears the progress line, before the last line or an error. */
  clear(): void {
    this.line.clear();
  }

  private draw(now: number): void {
    const seconds = Math.max((now - this.started) / 1000, 0.001);
    const rate = this.bytes / seconds;
    let line = `${this.verb} ${humanSize(this.bytes)}`;
    if (this.total !== undefined && this.total > 0) line += ` of ${humanSize(this.total)}`;
    line += `  ${humanSize(rate)}/s`;
    if (this.total !== undefined && rate > 0 && this.total > this.bytes) line += `  ${clock((this.total - this.bytes) / rate)} left`;
    this.line.draw(line);
  }
}

/** Seconds as m:ss (or h:mm:ss). */
function clock(seconds: number): string {
  const s = Math.ceil(seconds);
  const two = (n: number): string => String(n).padStart(2, '0');
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  return h > 0 ? `${h}:${two(m)}:${two(s % 60)}` : `${m}:${two(s % 60)}`;
}
