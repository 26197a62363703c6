import { Observable, Subject } from 'rxjs';
import { RpcError } from '../protocol/index.js';
import type { CallOptions, Client } from './client.js';

/** One output frame of `docker/container/exec` (spec/PROTOCOL.md §12). */
export type ExecOutput =
  | { readonly stream: 'stdout' | 'stderr'; readonly text: string }
  | { readonly stream: 'stdout' | 'stderr'; readonly data: Uint8Array };

export interface ExecResult {
  readonly exitCode: number;
  readonly stdoutBytes: number;
  readonly stderrBytes: number;
}

export interface ExecOptions extends CallOptions {
  readonly env?: readonly string[];
  readonly workingDir?: string;
  readonly user?: string;
  /** Bytes written to the command's stdin, then closed. */
  readonly stdin?: Uint8Array | string;
  /** `binary` delivers `data` bytes instead of UTF-8 `text`. */
  readonly encoding?: 'utf8' | 'binary';
}

export interface ExecHandle {
  /** stdout and stderr frames in order. Frames before the first subscriber are kept for it. */
  readonly output: Observable<ExecOutput>;
  /**
   * Resolves only from the `terminal: true` frame. A stream that ends without one
   * rejects: a lost exit code is never reported as 0 (EXEC-4).
   */
  readonly result: Promise<ExecResult>;
}

interface TerminalFrame {
  exitCode: number;
  terminal: true;
  stdoutBytes: number;
  stderrBytes: number;
}

function isTerminal(value: unknown): value is TerminalFrame {
  return typeof value === 'object' && value !== null && (value as { terminal?: unknown }).terminal === true;
}

/** Runs a command in a container; starts at once. */
export function exec(client: Client, containerId: string, cmd: readonly string[], options: ExecOptions = {}): ExecHandle {
  const { signal, deadlineMs, token, stdin, ...rest } = options;
  const input: Record<string, unknown> = { containerId, cmd: [...cmd], ...rest };
  if (stdin !== undefined) input['stdin'] = typeof stdin === 'string' ? new TextEncoder().encode(stdin) : stdin;
  const callOptions: CallOptions = {
    ...(signal ? { signal } : {}),
    ...(deadlineMs === undefined ? {} : { deadlineMs }),
    ...(token === undefined ? {} : { token }),
  };
  const output = new HeldUntilSubscribed<ExecOutput>();
  let terminal: TerminalFrame | undefined;
  const result = new Promise<ExecResult>((resolve, reject) => {
    client.subscribe<unknown>('docker/container/exec', input, callOptions).subscribe({
      next(value) {
        if (terminal) return;
        if (isTerminal(value)) {
          terminal = value;
          resolve({ exitCode: value.exitCode, stdoutBytes: value.stdoutBytes, stderrBytes: value.stderrBytes });
        } else {
          output.next(value as ExecOutput);
        }
      },
      error(error: unknown) {
        output.error(error);
        if (!terminal) reject(error);
      },
      complete() {
        if (terminal) output.complete();
        else {
          const error = new RpcError('INTERNAL', 'exec stream ended without a terminal frame; the exit code is unknown');
          output.error(error);
          reject(error);
        }
      },
    });
  });
  return { output: output.observable, result };
}

/**
 * A Subject that keeps what arrives before its first subscriber and hands it over
 * on subscription; after that it holds nothing (unlike a ReplaySubject, whose
 * memory would grow with the whole output).
 */
class HeldUntilSubscribed<T> {
  private readonly subject = new Subject<T>();
  private held: (() => void)[] | undefined = [];

  readonly observable = new Observable<T>((subscriber) => {
    const subscription = this.subject.subscribe(subscriber);
    const held = this.held;
    this.held = undefined;
    for (const replay of held ?? []) replay();
    return subscription;
  });

  next(value: T): void {
    if (this.held) this.held.push(() => this.subject.next(value));
    else this.subject.next(value);
  }

  error(error: unknown): void {
    if (this.held) this.held.push(() => this.subject.error(error));
    else this.subject.error(error);
  }

  complete(): void {
    if (this.held) this.held.push(() => this.subject.complete());
    else this.subject.complete();
  }
}
