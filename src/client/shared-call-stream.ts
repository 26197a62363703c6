import { decodeEnvelope, encodeFrame, envelopes, FrameDecoder, RpcError, SHARED_STREAM_TYPE, sharedStreamFrame, type Codec, type Envelope } from '../protocol/index.js';
import type { WtSession } from '../webtransport/index.js';
import type { CallChannel, CallSink } from './connection.js';

let streamCount = 0;

/**
 * One shared call stream of a WebTransport session (spec/PROTOCOL.md §5.4, WTS-1):
 * the frames of many calls in both directions, each acting on its id, as on a
 * WebSocket. A call's backpressure is its credit (§4.7, §4.8), not the stream's.
 */
export class SharedCallStream {
  private readonly sinks = new Map<string, CallSink>();
  private ended = false;

  private constructor(
    private readonly codec: Codec,
    private readonly writer: WritableStreamDefaultWriter<Uint8Array>,
  ) {}

  /**
   * Asks the callee for a shared stream and waits for its answer: the stream, or
   * undefined when the callee refused it (an older callee resets or ends the stream,
   * WT-3, WT-7). Nothing but the request went on it, so no call is lost (WTS-2).
   * `onEnd`: the stream ended after it was accepted.
   */
  static async open(wt: WtSession, codec: Codec, onEnd: () => void): Promise<SharedCallStream | undefined> {
    const stream = await wt.createBidirectionalStream({ waitUntilAvailable: true });
    const writer = stream.writable.getWriter();
    const reader = stream.readable.getReader();
    const id = `shared-${++streamCount}`;
    writer.write(encodeFrame(codec.encode(sharedStreamFrame(id)))).catch(() => undefined);
    const decoder = new FrameDecoder();
    let first: Uint8Array | undefined;
    let rest: Uint8Array[] = [];
    try {
      while (first === undefined) {
        const { value, done } = await reader.read();
        if (done) break;
        [first, ...rest] = decoder.push(value);
      }
    } catch {
      first = undefined;
    }
    const answer = first === undefined ? undefined : decodeEnvelope(codec, first);
    if (answer?.kind !== 'unknown-type' || answer.type !== SHARED_STREAM_TYPE || answer.id !== id) {
      void writer.abort(new Error('the callee refused a shared call stream')).catch(() => undefined);
      void reader.cancel().catch(() => undefined);
      return undefined;
    }
    const shared = new SharedCallStream(codec, writer);
    for (const body of rest) shared.route(body);
    void shared.read(reader, decoder).finally(onEnd);
    return shared;
  }

  /** False once the stream ended: later calls need another. */
  get alive(): boolean {
    return !this.ended;
  }

  startCall(request: Envelope, sink: CallSink): CallChannel {
    const { id } = request;
    this.sinks.set(id, sink);
    this.write(this.codec.encode(request));
    const mine = (): boolean => this.sinks.get(id) === sink;
    return {
      abort: () => {
        if (!mine()) return;
        this.sinks.delete(id);
        this.write(this.codec.encode(envelopes.aborted(id)));
      },
      done: () => {
        if (mine()) this.sinks.delete(id);
      },
      send: (envelope) => {
        const body = this.codec.encode(envelope);
        if (mine()) this.write(body);
        return body.byteLength;
      },
    };
  }

  /** A `call.aborted` for a call already done here: the callee may forget it (§4.9). */
  forget(id: string): void {
    this.write(this.codec.encode(envelopes.aborted(id)));
  }

  private write(body: Uint8Array): void {
    if (!this.ended) this.writer.write(encodeFrame(body)).catch(() => undefined);
  }

  private route(body: Uint8Array): void {
    const parsed = decodeEnvelope(this.codec, body);
    if (parsed.kind === 'event') this.sinks.get(parsed.envelope.id)?.frame(parsed.envelope, body.byteLength);
  }

  private async read(reader: ReadableStreamDefaultReader<Uint8Array>, decoder: FrameDecoder): Promise<void> {
    let error = new RpcError('UNAVAILABLE', 'the server ended the shared call stream');
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        for (const body of decoder.push(value)) this.route(body);
      }
    } catch (cause) {
      error = new RpcError('UNAVAILABLE', `shared call stream failed: ${String(cause)}`);
    }
    this.ended = true;
    // A call whose terminal event has not come is lost with its stream (WTS-4).
    const sinks = [...this.sinks.values()];
    this.sinks.clear();
    for (const sink of sinks) sink.lost(error);
    void this.writer.abort(error).catch(() => undefined);
  }
}
