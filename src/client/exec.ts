import { Observable, Subject } from '../rx/index.js';
import { execContract, isTerminalFrame, type ExecInputItem, type ExecOutputFrame, type InputOf } from '../contracts/index.js';
import { RpcError } from '../protocol/index.js';
import type { CallOptions, Client } from './client.js';
import { ExecInput, type ExecStdin, type StdinSource } from './exec-input.js';

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
   * The command's stdin: bytes (or text) written at once; a source (async iterable or
   * web `ReadableStream`) streamed as it comes; or `'pipe'`, for the handle's
   * `stdin.write()` and `stdin.end()`. Streamed stdin goes as the server grants credit
   * (spec §4.7), so the command's pace sets the writer's. Without it the command's
   * stdin is empty, as with `docker exec` without `-i`.
   */
  readonly stdin?: Uint8Array | string | StdinSource | 'pipe';
  /** Run on a pseudo-terminal of this size (`docker exec -t`): output comes merged, as stdout (EXEC-10). */
  readonly tty?: { readonly cols: number; readonly rows: number };
  /** `binary` delivers `data` bytes instead of UTF-8 `text`. */
  readonly encoding?: 'utf8' | 'binary';
}

/** What a running exec takes besides its request (EXEC-8). */
export interface ExecControls {
  /** Writable with `stdin: 'pipe'`; otherwise `write` rejects. */
  readonly stdin: ExecStdin;
  /** The terminal's new size (with `tty`). */
  resize(cols: number, rows: number): void;
  /** Sends a signal to the command's process (EXEC-9), e.g. `SIGINT` without a tty. */
  signal(name: ExecSignal): void;
}

export type ExecSignal = Extract<ExecInputItem, { signal: unknown }>['signal'];

export interface ExecHandle extends ExecControls {
  /** stdout and stderr frames in order. Frames before the first subscriber are kept for it. */
  readonly output: Observable<ExecOutput>;
  /**
   * Resolves only from the `terminal: true` frame. A stream that ends without one
   * rejects: a lost exit code is never reported as 0 (EXEC-4).
   */
  readonly result: Promise<ExecResult>;
}

/** The exec call as a pull stream of its output, with its controls. */
export type ExecFrames = AsyncGenerator<ExecOutput, ExecResult> & ExecControls;

/**
 * The exec call as a pull stream: yields the output frames in order and returns the
 * result from the terminal frame (EXEC-4: the terminal flag, never the presence of
 * `exitCode`). A stream that ends without it throws: the exit code is unknown, never
 * 0. Leaving the loop early aborts the call, which kills the process. The one place
 * the terminal-frame rule is written; `exec()` and the CLI both use it.
 */
export function execFrames(client: Client, containerId: string, cmd: readonly string[], options: ExecOptions = {}): ExecFrames {
  const { signal, deadlineMs, token, id, stdin, env, tty, workingDir, user, encoding, windowBytes, onAdmitted, onResumable, resume } = options;
  // The operation's input from the exec options only: call options never leak into it.
  const input: InputOf<typeof execContract> = {
    containerId,
    cmd: [...cmd],
    ...(env ? { env: [...env] } : {}),
    ...(workingDir === undefined ? {} : { workingDir }),
    ...(user === undefined ? {} : { user }),
    ...(encoding === undefined ? {} : { encoding }),
    ...(tty ? { tty: { cols: tty.cols, rows: tty.rows } } : {}),
  };
  // Bytes go in the request; a source or 'pipe' streams on the call's input stream.
  const source = stdin === undefined || stdin === 'pipe' || typeof stdin === 'string' || stdin instanceof Uint8Array ? undefined : stdin;
  const streaming = stdin === 'pipe' || source !== undefined;
  if (streaming) input.stdin = 'stream';
  else if (typeof stdin === 'string') input.stdin = new TextEncoder().encode(stdin);
  else if (stdin instanceof Uint8Array) input.stdin = stdin;
  // The input stream always exists, for resizes and signals; it carries stdin only when streaming.
  const channel = new ExecInput(streaming);
  if (source) void channel.pipeFrom(source);
  const callOptions: CallOptions = {
    input: channel,
    ...(signal ? { signal } : {}),
    ...(deadlineMs === undefined ? {} : { deadlineMs }),
    ...(token === undefined ? {} : { token }),
    ...(id === undefined ? {} : { id }),
    ...(windowBytes === undefined ? {} : { windowBytes }),
    ...(onAdmitted ? { onAdmitted } : {}),
    ...(onResumable ? { onResumable } : {}),
    ...(resume === undefined ? {} : { resume }),
  };
  const frames = (async function* (): AsyncGenerator<ExecOutput, ExecResult> {
    let result: ExecResult | undefined;
    try {
      // Read on to call.completed after the terminal frame: leaving early would abort a call that is ending anyway.
      for await (const frame of client.iterate(execContract, input, callOptions)) {
        if (result) continue;
        if (isTerminalFrame(frame)) result = { exitCode: frame.exitCode, stdoutBytes: frame.stdoutBytes, stderrBytes: frame.stderrBytes };
        else yield frame;
      }
    } finally {
      channel.close();
    }
    if (!result) throw new RpcError('INTERNAL', 'the exec stream ended without a terminal frame; the exit code is unknown');
    return result;
  })();
  const controls: ExecControls = {
    stdin: { write: (chunk) => channel.write(chunk), end: () => channel.end() },
    resize: (cols, rows) => channel.resize(cols, rows),
    signal: (name) => channel.signal(name),
  };
  return Object.assign(frames, controls);
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
  return { output: output.observable, result, stdin: frames.stdin, resize: frames.resize, signal: frames.signal };
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
