import { statfsSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import type { CallObserver, Logger, ObservedCall } from '../dispatcher/index.js';
import { RpcError } from '../protocol/index.js';
import type { AppendStream } from './append-stream.js';

/** What bounds a recording (docs/cli.md "Recording and audit"); `serve --record-max-bytes`, `--record-reserve-bytes`, `--record-strict`. */
export interface RecordingPolicy {
  /** The largest a recording's file grows, its closing events included. */
  readonly maxBytes: number;
  /** Free space kept on the recordings' filesystem for the audit log: below it, recordings stop and none starts. */
  readonly reserveBytes: number;
  /** A session whose recording stops (cap, reserve, a disk that fails or falls too far behind) is ended, not left unrecorded. */
  readonly strict: boolean;
}

export interface TtySize {
  readonly cols: number;
  readonly rows: number;
}

/** Room kept under the cap for the closing events, so a stopped recording never exceeds it. */
const CLOSING_ROOM_BYTES = 1024;
/** How often (bytes written) a recording looks at the free space again. */
const STATFS_EVERY_BYTES = 256 * 1024;

/** Why a recording stopped before its session ended. */
type StopReason = 'cap' | 'reserve' | 'failed';

/** What the recorder shares between its recordings: the unwritten bytes they may hold together. */
export interface RecordingBudget {
  /** The recordings' unwritten bytes together; read only by a recording that itself holds a lot unwritten. */
  pending(): number;
  readonly maxPendingBytes: number;
}

/**
 * One exec session's asciicast v2 file: output as "o" events, resizes as "r". It
 * keeps up with bursts (what the disk has not taken yet waits, in order, up to the
 * cap), and when it must stop before the session ends (its cap, the disk's reserve, a
 * failed or hopelessly slow disk) its last events say so, an "o" line a player shows
 * and an "m" marker, never silence; under `strict` the session is ended too.
 */
export class Recording {
  private readonly started = performance.now();
  private readonly decoders = new Map<string, TextDecoder>();
  private stopped = false;
  private closing: Promise<void> | undefined;
  /** Bytes given to the file so far. */
  private written = 0;
  private sinceStatfs = 0;

  constructor(
    private readonly out: AppendStream,
    private readonly dir: string,
    private readonly call: ObservedCall,
    tty: TtySize,
    private readonly policy: RecordingPolicy,
    private readonly budget: RecordingBudget,
    private readonly logger: Logger,
  ) {
    const cmd = (call.input as { cmd: readonly string[] }).cmd;
    const container = (call.input as { containerId?: unknown }).containerId;
    this.line({
      version: 2,
      width: tty.cols,
      height: tty.rows,
      timestamp: Math.floor(Date.now() / 1000),
      command: cmd.map(shellWord).join(' '),
      title: `${call.identity?.subject ?? 'anonymous'}${typeof container === 'string' ? ` in ${container}` : ''}`,
    });
  }

  observer(onEnd: () => void): CallObserver {
    return {
      input: (item) => {
        const size = resizeOf(item);
        if (size) this.event('r', `${size.cols}x${size.rows}`);
      },
      output: (output) => {
        const text = this.textOf(output);
        if (text) this.event('o', text);
      },
      ended: () => void this.close().then(onEnd),
    };
  }

  /** Ends the recording; the same promise on every call. */
  close(): Promise<void> {
    return (this.closing ??= this.finish());
  }

  private finish(): Promise<void> {
    for (const decoder of this.decoders.values()) {
      const rest = decoder.decode();
      if (rest) this.event('o', rest);
    }
    this.decoders.clear();
    this.stopped = true;
    return this.out.close();
  }

  /** An output item's text; bytes (encoding binary) decoded as UTF-8 across items, as a terminal would. */
  private textOf(output: unknown): string | undefined {
    if (typeof output !== 'object' || output === null) return undefined;
    const { stream, text, data } = output as { stream?: unknown; text?: unknown; data?: unknown };
    if (typeof stream !== 'string') return undefined;
    if (typeof text === 'string') return text;
    if (!(data instanceof Uint8Array)) return undefined;
    let decoder = this.decoders.get(stream);
    if (!decoder) this.decoders.set(stream, (decoder = new TextDecoder('utf-8')));
    return decoder.decode(data, { stream: true });
  }

  private event(code: 'o' | 'r', text: string): void {
    this.line([this.now(), code, text]);
  }

  private now(): number {
    return Math.round(performance.now() - this.started) / 1000;
  }

  private line(value: unknown): void {
    if (this.stopped) return;
    const text = `${JSON.stringify(value)}\n`;
    const bytes = Buffer.byteLength(text);
    if (this.written + bytes > this.policy.maxBytes - CLOSING_ROOM_BYTES) return this.stop('cap', `it reached its cap of ${this.policy.maxBytes} bytes (--record-max-bytes)`);
    this.sinceStatfs += bytes;
    if (this.sinceStatfs >= STATFS_EVERY_BYTES) {
      this.sinceStatfs = 0;
      // What the recordings hold unwritten lands on the same disk: it counts as taken already.
      const free = freeBytes(this.dir);
      const left = free === undefined ? undefined : free - this.budget.pending();
      if (left !== undefined && left < this.policy.reserveBytes) return this.stop('reserve', `its disk has ${left} bytes free, under the ${this.policy.reserveBytes} kept for the audit log (--record-reserve-bytes)`);
    }
    // Only a recording that itself holds a lot unwritten adds up everyone's: the common path costs nothing.
    if (this.out.pending > STATFS_EVERY_BYTES && this.budget.pending() + bytes > this.budget.maxPendingBytes) {
      return this.stop('failed', `the disk fell ${this.budget.maxPendingBytes} bytes behind the recordings`);
    }
    if (!this.out.write(text)) return this.stop('failed', 'its file could not be written');
    this.written += bytes;
  }

  /** Stops recording before the session ends: the cast says so in its last events, and `strict` ends the session. */
  private stop(reason: StopReason, why: string): void {
    this.stopped = true;
    const message = `callwire: the recording stopped here: ${why}; ${this.policy.strict ? 'the session was ended (--record-strict)' : 'the session went on unrecorded'}`;
    const at = this.now();
    // Past the cap's closing room, never past the cap; a file that failed takes nothing more.
    this.out.write(`${JSON.stringify([at, 'o', `\r\n[${message}]\r\n`])}\n${JSON.stringify([at, 'm', message])}\n`);
    this.logger.warn('a recording stopped before its session ended', { callId: this.call.id, reason, why, strict: this.policy.strict });
    if (this.policy.strict) this.call.end?.(RpcError.of(reason === 'cap' ? 'LIMIT_EXCEEDED' : 'UNAVAILABLE', `the session's recording stopped (${why}); this server ends such a session (--record-strict)`));
  }
}

/** Free bytes for an unprivileged writer on `dir`'s filesystem; undefined when it cannot be read. */
export function freeBytes(dir: string): number | undefined {
  try {
    const stat = statfsSync(dir);
    return stat.bavail * stat.bsize;
  } catch {
    return undefined;
  }
}

function resizeOf(item: unknown): TtySize | undefined {
  return typeof item === 'object' && item !== null ? sizeOf((item as { resize?: unknown }).resize) : undefined;
}

export function sizeOf(value: unknown): TtySize | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const { cols, rows } = value as { cols?: unknown; rows?: unknown };
  return typeof cols === 'number' && typeof rows === 'number' ? { cols, rows } : undefined;
}

function shellWord(word: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, "'\\''")}'`;
}
