import type { ExecInputItem } from '../contracts/index.js';
import { Wakeup } from '../flow/index.js';
import { RpcError } from '../protocol/index.js';

/** Where an exec's stdin comes from, as the SDK takes it. */
export type StdinSource = AsyncIterable<Uint8Array> | ReadableStream<Uint8Array>;

/** The command's stdin as a writable: each write resolves once the server's credit let it go (spec §4.7). */
export interface ExecStdin {
  write(chunk: Uint8Array | string): Promise<void>;
  /** End of input: the command reads end of file. */
  end(): void;
}

/**
 * An exec's input stream on the client (spec §12, EXEC-8): stdin bytes written by
 * the caller or pulled from a source, and resize and signal messages. The call's
 * input pump takes items from it as the server grants credit. A resize or a signal
 * goes ahead of stdin that has not been sent yet, so a Ctrl-C for a command that
 * does not read its input is not stuck behind that input.
 */
export class ExecInput implements AsyncIterable<ExecInputItem>, ExecStdin {
  private readonly data: { item: ExecInputItem; taken: () => void }[] = [];
  private readonly controls: ExecInputItem[] = [];
  private ended = false;
  private closed = false;
  private failure: { error: unknown } | undefined;
  private releaseSource: () => void = () => undefined;
  private readonly wakeup = new Wakeup();

  constructor(private readonly streaming: boolean) {}

  write(chunk: Uint8Array | string): Promise<void> {
    if (!this.streaming) return Promise.reject(new RpcError('INVALID_INPUT', "this exec's stdin is not a stream: open it with stdin: 'pipe'"));
    if (this.ended) return Promise.reject(new RpcError('INVALID_INPUT', 'write after end of stdin'));
    const bytes = typeof chunk === 'string' ? new TextEncoder().encode(chunk) : chunk;
    if (bytes.byteLength === 0 || this.closed) return Promise.resolve();
    return new Promise<void>((taken) => {
      this.data.push({ item: { data: bytes }, taken });
      this.notify();
    });
  }

  end(): void {
    this.ended = true;
    this.notify();
  }

  resize(cols: number, rows: number): void {
    this.control({ resize: { cols: Math.max(1, Math.floor(cols)), rows: Math.max(1, Math.floor(rows)) } });
  }

  signal(signal: Extract<ExecInputItem, { signal: unknown }>['signal']): void {
    this.control({ signal });
  }

  /**
   * Writes a source's chunks as the server takes them, then ends stdin; a source
   * that fails fails the call. When the call ends first, the source is released
   * (a Node stream is destroyed, a web stream cancelled), so a terminal or pipe
   * left open does not keep the process alive.
   */
  async pipeFrom(source: StdinSource): Promise<void> {
    const reader = isReadableStream(source) ? source.getReader() : undefined;
    const iterator = reader ? undefined : (source as AsyncIterable<Uint8Array>)[Symbol.asyncIterator]();
    this.releaseSource = () => {
      void reader?.cancel().catch(() => undefined);
      // A Node stream is destroyed outright: its iterator's return() waits behind a
      // pending read, so a terminal nobody types into would hold the process open.
      const node = source as { destroy?: () => void };
      if (typeof node.destroy === 'function') node.destroy();
      else void iterator?.return?.()?.catch(() => undefined);
    };
    try {
      for (;;) {
        const step = reader ? await reader.read() : await iterator!.next();
        if (step.done || this.closed) break;
        await this.write(step.value);
      }
      this.end();
    } catch (error) {
      this.failure = { error };
      this.notify();
    } finally {
      this.releaseSource();
    }
  }

  /** The call ended: nothing more is sent, and pending writes resolve. */
  close(): void {
    this.closed = true;
    this.releaseSource();
    for (const pending of this.data.splice(0)) pending.taken();
    this.notify();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<ExecInputItem> {
    try {
      for (;;) {
        if (this.closed) return;
        if (this.failure) throw this.failure.error;
        const control = this.controls.shift();
        if (control) {
          yield control;
          continue;
        }
        const next = this.data.shift();
        if (next) {
          next.taken();
          yield next.item;
          continue;
        }
        if (this.ended) return;
        await this.wakeup.wait();
      }
    } finally {
      this.close();
    }
  }

  private control(item: ExecInputItem): void {
    if (this.closed) return;
    this.controls.push(item);
    this.notify();
  }

  private notify(): void {
    this.wakeup.wake();
  }
}

function isReadableStream(source: StdinSource): source is ReadableStream<Uint8Array> {
  return typeof (source as ReadableStream<Uint8Array>).getReader === 'function';
}
