import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { CallObserver, Logger, ObserveCalls, ObservedCall } from '../dispatcher/index.js';
import { AppendStream } from './append-stream.js';

/** What one recording may hold unwritten before it is stopped (a disk slower than the session). */
const MAX_BUFFERED_BYTES_PER_RECORDING = 8 * 1024 * 1024;

export interface SessionRecorder {
  readonly observe: ObserveCalls;
  /** Writes what the open recordings hold and closes them. */
  close(): Promise<void>;
}

/**
 * `serve --record DIR` (docs/cli.md "Recording and audit"): every exec with a
 * terminal becomes one asciicast v2 file, which `asciinema play` plays: its output
 * as "o" events and its resizes as "r" events. What the caller types is not
 * recorded: a terminal does not echo a password, and the recording must not hold
 * one either; what the terminal echoed is in the output. Execs without a terminal
 * are not recorded (the audit log has them).
 */
export function sessionRecorder(dir: string, logger: Logger): SessionRecorder {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const open = new Set<Recording>();
  let serial = 0;
  return {
    observe(call) {
      const tty = terminalOf(call);
      if (!tty) return undefined;
      const path = join(dir, fileName(call.id, ++serial));
      const recording = new Recording(AppendStream.create(path, `the recording ${path}`, MAX_BUFFERED_BYTES_PER_RECORDING, logger), call, tty);
      open.add(recording);
      return recording.observer(() => open.delete(recording));
    },
    async close() {
      await Promise.all([...open].map((recording) => recording.close()));
    },
  };
}

interface TerminalSize {
  readonly cols: number;
  readonly rows: number;
}

class Recording {
  private readonly started = performance.now();
  private readonly decoders = new Map<string, TextDecoder>();
  private stopped = false;
  private closing: Promise<void> | undefined;

  constructor(
    private readonly out: AppendStream,
    call: ObservedCall,
    tty: TerminalSize,
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
    this.line([Math.round(performance.now() - this.started) / 1000, code, text]);
  }

  private line(value: unknown): void {
    if (this.stopped) return;
    // A recording with a gap would show a terminal that never was: one refused write ends it.
    if (!this.out.write(`${JSON.stringify(value)}\n`)) this.stopped = true;
  }
}

/** An exec with a terminal: its operation runs a command and its input asks for a tty of some size. */
function terminalOf(call: ObservedCall): TerminalSize | undefined {
  if (call.operation.commandEnd === undefined) return undefined;
  const input = call.input as { cmd?: unknown; tty?: unknown } | null;
  if (typeof input !== 'object' || input === null || !Array.isArray(input.cmd)) return undefined;
  return sizeOf(input.tty);
}

function resizeOf(item: unknown): TerminalSize | undefined {
  return typeof item === 'object' && item !== null ? sizeOf((item as { resize?: unknown }).resize) : undefined;
}

function sizeOf(value: unknown): TerminalSize | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const { cols, rows } = value as { cols?: unknown; rows?: unknown };
  return typeof cols === 'number' && typeof rows === 'number' ? { cols, rows } : undefined;
}

/**
 * `<UTC time>-<call id>-<serial>.cast`: the call id is the caller's, so it is cut to
 * 40 characters of [A-Za-z0-9_-] (no path, no dot file); the serial keeps two
 * connections' equal ids apart.
 */
function fileName(callId: string, serial: number): string {
  const time = new Date().toISOString().replace(/[:.]/g, '-');
  const id = callId.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 40);
  return `${time}-${id}-${serial}.cast`;
}

function shellWord(word: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, "'\\''")}'`;
}
