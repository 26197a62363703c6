import { humanSize } from './sizes.js';

const REDRAW_MS = 250;

/**
 * The copy's progress on stderr, on a terminal only (a pipe or a file gets nothing, as
 * docker cp's): bytes, rate and, when the total is known, time left; redrawn in place.
 */
export class Progress {
  private bytes = 0;
  private readonly started = Date.now();
  private drawnAt = 0;
  private drawn = false;

  constructor(
    private readonly shown: boolean,
    private readonly verb: string,
    private readonly total?: number,
  ) {}

  add(bytes: number): void {
    this.bytes += bytes;
    if (!this.shown) return;
    const now = Date.now();
    if (now - this.drawnAt < REDRAW_MS) return;
    this.drawnAt = now;
    this.draw(now);
  }

  /** Clears the progress line, before the last line or an error. */
  clear(): void {
    if (this.drawn) process.stderr.write('\r\x1b[2K');
    this.drawn = false;
  }

  private draw(now: number): void {
    const seconds = Math.max((now - this.started) / 1000, 0.001);
    const rate = this.bytes / seconds;
    let line = `${this.verb} ${humanSize(this.bytes)}`;
    if (this.total !== undefined && this.total > 0) line += ` of ${humanSize(this.total)}`;
    line += `  ${humanSize(rate)}/s`;
    if (this.total !== undefined && rate > 0 && this.total > this.bytes) line += `  ${clock((this.total - this.bytes) / rate)} left`;
    process.stderr.write(`\r\x1b[2K${line}`);
    this.drawn = true;
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
