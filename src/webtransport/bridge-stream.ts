// One stream of a bridge session (./bridge-mux.ts): the web stream pair a WebTransport
// stream is, each half under its own window (./bridge-frame.ts). Like the rest of the
// bridge it runs in Deno's edges too, from source: it imports only the bridge's frames
// and the flow primitives.
import { ReceiveWindow, SendCredit } from '../flow/index.js';
import { BridgeMuxError, CREDIT_AFTER_BYTES, MUX_KIND, MUX_STREAM_WINDOW_BYTES, u32Bytes } from './bridge-frame.js';

/** One multiplexed stream: the web stream pair a WebTransport stream is. */
export interface MuxStream {
  readonly id: number;
  readonly readable: ReadableStream<Uint8Array>;
  readonly writable: WritableStream<Uint8Array>;
}

/** What a stream needs of its session. */
export interface StreamSession {
  /** Queues a frame; the turn's frames are written together. */
  send(kind: number, id: number, payload?: Uint8Array): void;
  /** The stream's two halves are over: frames for it are dropped from now on. */
  forget(id: number): void;
  readonly isEnded: boolean;
}

/** One stream's two halves, each under its own window. */
export class BridgeStream implements MuxStream {
  readonly readable: ReadableStream<Uint8Array>;
  readonly writable: WritableStream<Uint8Array>;
  private readController!: ReadableStreamDefaultController<Uint8Array>;
  private writeController!: WritableStreamDefaultController;
  /** Arrived, not yet taken by the reader. */
  private queue: Uint8Array[] = [];
  /** What the peer may still send, granted back as the reader takes bytes. */
  private readonly receive: ReceiveWindow;
  /** A read waits and nothing is queued: the next DATA goes straight to it. */
  private wanted = false;
  private finReceived = false;
  private readDone = false;
  private writeDone = false;
  /** What the peer's reader still grants us: a write never exceeds it (a chunk is cut to fit). */
  private readonly sendCredit = new SendCredit(MUX_STREAM_WINDOW_BYTES);
  /** Why both halves failed: a write waiting for credit fails with it. */
  private goneError: Error | undefined;

  constructor(
    readonly id: number,
    private readonly session: StreamSession,
  ) {
    this.receive = new ReceiveWindow(MUX_STREAM_WINDOW_BYTES, CREDIT_AFTER_BYTES, (bytes) => this.session.send(MUX_KIND.credit, this.id, u32Bytes(bytes)));
    // A high-water mark of 0: a byte leaves the queue only when a read asks for it, and only then is it credited.
    this.readable = new ReadableStream<Uint8Array>(
      {
        start: (controller) => void (this.readController = controller),
        pull: () => this.pull(),
        cancel: () => this.reset(),
      },
      { highWaterMark: 0 },
    );
    this.writable = new WritableStream<Uint8Array>({
      start: (controller) => void (this.writeController = controller),
      write: (chunk) => this.write(chunk),
      close: () => {
        if (this.writeDone) throw new Error('the stream was reset');
        this.writeDone = true;
        this.session.send(MUX_KIND.fin, this.id);
        this.forgetIfOver();
      },
      abort: () => this.reset(),
    });
  }

  data(payload: Uint8Array): void {
    if (this.finReceived) throw new BridgeMuxError(`data on stream ${this.id} after its end`);
    if (payload.byteLength > this.receive.credit) throw new BridgeMuxError(`data on stream ${this.id} over its window`);
    if (this.readDone) return;
    this.receive.arrived(payload.byteLength);
    if (this.wanted) {
      this.wanted = false;
      this.readController.enqueue(payload);
      this.took(payload.byteLength);
      return;
    }
    this.queue.push(payload);
  }

  fin(): void {
    if (this.finReceived) throw new BridgeMuxError(`a second end of stream ${this.id}`);
    this.finReceived = true;
    if (this.queue.length === 0) this.endRead();
    this.forgetIfOver();
  }

  credit(bytes: number): void {
    if (this.sendCredit.available + bytes > MUX_STREAM_WINDOW_BYTES) throw new BridgeMuxError(`credit on stream ${this.id} over its window`);
    this.sendCredit.grant(bytes);
  }

  /** Reset by the peer, or the session is gone: both halves fail. */
  gone(error: Error, keepEnded = false): void {
    if (!(keepEnded && this.finReceived)) this.queue = [];
    if (!this.readDone && !(keepEnded && this.finReceived)) {
      this.readDone = true;
      this.readController.error(error);
    }
    if (!this.writeDone) {
      this.writeDone = true;
      this.writeController.error(error);
    }
    this.goneError = error;
    this.sendCredit.stop();
    this.session.forget(this.id);
  }

  private pull(): void {
    const chunk = this.queue.shift();
    if (chunk === undefined) {
      this.wanted = !this.readDone;
      return;
    }
    this.readController.enqueue(chunk);
    this.took(chunk.byteLength);
    if (this.queue.length === 0 && this.finReceived) this.endRead();
  }

  /** The reader took `bytes`: granted back in steps, and not at all once the peer's half is over. */
  private took(bytes: number): void {
    if (!this.finReceived) this.receive.take(bytes);
  }

  private endRead(): void {
    if (this.readDone) return;
    this.readDone = true;
    this.readController.close();
  }

  private write(chunk: Uint8Array): Promise<void> | undefined {
    if (this.writeDone || this.session.isEnded) return Promise.reject(new Error('the stream was reset'));
    if (chunk.byteLength <= this.sendCredit.available) {
      this.sendCredit.charge(chunk.byteLength);
      if (chunk.byteLength > 0) this.session.send(MUX_KIND.data, this.id, chunk);
      return undefined;
    }
    return this.writeWithinCredit(chunk);
  }

  /** A chunk larger than the credit: what fits now, the rest as the reader grants more. */
  private async writeWithinCredit(chunk: Uint8Array): Promise<void> {
    for (let at = 0; at < chunk.byteLength; ) {
      if (this.sendCredit.available === 0 && !(await this.sendCredit.untilCredit())) throw this.goneError ?? new Error('the stream was reset');
      if (this.writeDone) throw new Error('the stream was reset');
      const n = Math.min(this.sendCredit.available, chunk.byteLength - at);
      this.sendCredit.charge(n);
      this.session.send(MUX_KIND.data, this.id, chunk.subarray(at, at + n));
      at += n;
    }
  }

  /** This side resets the stream: the peer hears it once, and both halves end here. */
  private reset(): void {
    if (this.readDone && this.writeDone) return;
    this.session.send(MUX_KIND.reset, this.id);
    this.gone(new Error('the stream was reset here'));
  }

  private forgetIfOver(): void {
    if (this.finReceived && this.writeDone) this.session.forget(this.id);
  }
}
