import { Observable, Subject } from 'rxjs';
import { execContract, isTerminalFrame, type ExecOutputFrame, type InputOf } from '../contracts/index.js';
import { RpcError } from '../protocol/index.js';
import type { CallOptions, Client } from './client.js';

/** One output frame of `docker/container/exec` (spec/PROTOCOL.md §12). */
export type ExecOutput = ExecOutputFrame;

export interface ExecResult {
  readonly exitCode: number;
  readonly stdoutBytes: number;
  readonly stderrBytes: number;
}

export interface ExecOptions extends CallOptions {
  readonly env?: readonly string[];
  readonly workingDir?: string;
  readonly user?: string;
  /**
   * The command's stdin: bytes (or text) written at once, or a source streamed as it
   * comes (spec §4.7: pulled as the server grants credit, so the command's pace sets
   * the reader's), then closed.
   */
  readonly stdin?: Uint8Array | string | AsyncIterable<Uint8Array>;
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

/**
 * The exec call as a pull stream: yields the output frames in order and returns the
 * result from the terminal frame (EXEC-4: the terminal flag, never the presence of
 * `exitCode`). A stream that ends without it throws: the exit code is unknown, never
 * 0. Leaving the loop early aborts the call, which kills the process. The one place
 * the terminal-frame rule is written; `exec()` and the CLI both use it.
 */
export async function* execFrames(client: Client, containerId: string, cmd: readonly string[], options: ExecOptions = {}): AsyncGenerator<ExecOutput, ExecResult> {
  const { signal, deadlineMs, token, id, stdin, env, ...rest } = options;
  const input: InputOf<typeof execContract> = { containerId, cmd: [...cmd], ...rest, ...(env ? { env: [...env] } : {}) };
  let stream: AsyncIterable<{ data: Uint8Array }> | undefined;
  if (typeof stdin === 'string') input.stdin = new TextEncoder().encode(stdin);
  else if (stdin instanceof Uint8Array) input.stdin = stdin;
  else if (stdin !== undefined) {
    input.stdin = 'stream';
    stream = asItems(stdin);
  }
  const callOptions: CallOptions = {
    ...(stream ? { input: stream } : {}),
    ...(signal ? { signal } : {}),
    ...(deadlineMs === undefined ? {} : { deadlineMs }),
    ...(token === undefined ? {} : { token }),
    ...(id === undefined ? {} : { id }),
  };
  let result: ExecResult | undefined;
  // Read on to call.completed after the terminal frame: leaving early would abort a call that is ending anyway.
  for await (const frame of client.iterate(execContract, input, callOptions)) {
    if (result) continue;
    if (isTerminalFrame(frame)) result = { exitCode: frame.exitCode, stdoutBytes: frame.stdoutBytes, stderrBytes: frame.stderrBytes };
    else yield frame;
  }
  if (!result) throw new RpcError('INTERNAL', 'the exec stream ended without a terminal frame; the exit code is unknown');
  return result;
}

async function* asItems(source: AsyncIterable<Uint8Array>): AsyncGenerator<{ data: Uint8Array }> {
  for await (const chunk of source) if (chunk.byteLength > 0) yield { data: chunk };
}

/** Runs a command in a container; starts at once. */
export function exec(client: Client, containerId: string, cmd: readonly string[], options: ExecOptions = {}): ExecHandle {
  const output = new HeldUntilSubscribed<ExecOutput>();
  const frames = execFrames(client, containerId, cmd, options);
  const result = (async (): Promise<ExecResult> => {
    try {
      for (;;) {
        const step = await frames.next();
        if (step.done) {
          output.complete();
          return step.value;
        }
        output.next(step.value);
      }
    } catch (error) {
      output.error(error);
      throw error;
    }
  })();
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
