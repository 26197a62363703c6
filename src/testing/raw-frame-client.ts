import { EventQueue } from '../conformance/index.js';
import { codecs, decodeEnvelope, envelopes, type Codec, type Envelope } from '../protocol/index.js';

export interface CloseInfo {
  readonly code: number;
  readonly reason: string;
}

/**
 * A caller that speaks raw frames: send an envelope (or raw bytes), wait for a frame
 * matching a predicate, wait for close. Transport-independent: a transport feeds it
 * with `deliver` and `closedBy`, and it writes through `write`.
 */
export class RawFrameClient {
  private readonly inbox = new EventQueue<Envelope>();
  private closeInfo: CloseInfo | undefined;
  private closeWaiters: ((info: CloseInfo) => void)[] = [];

  constructor(
    private readonly write: (bytes: Uint8Array) => void,
    readonly codec: Codec = codecs.msgpack,
  ) {}

  get isClosed(): boolean {
    return this.closeInfo !== undefined;
  }

  send(envelope: Envelope): void {
    this.write(this.codec.encode(envelope));
  }

  sendRaw(bytes: Uint8Array): void {
    this.write(bytes);
  }

  request(id: string, operationId: string, input?: unknown, extra: Record<string, unknown> = {}): void {
    this.send(envelopes.requested(id, { operationId, ...(input === undefined ? {} : { input }), ...extra }));
  }

  abort(id: string): void {
    this.send(envelopes.aborted(id));
  }

  /** Every frame received, in order. */
  get received(): readonly Envelope[] {
    return this.inbox.all();
  }

  /** Frames received for one call id, in order. */
  framesFor(id: string): Envelope[] {
    return this.received.filter((e) => e.id === id);
  }

  /** The next frame, not yet returned by `next`, that matches; waits up to `timeoutMs`. */
  async next(match: (e: Envelope) => boolean = () => true, timeoutMs = 5000): Promise<Envelope> {
    const envelope = await this.inbox.take(match, timeoutMs);
    if (!envelope) throw new Error(`no matching frame within ${timeoutMs} ms; received ${this.received.length} frames`);
    return envelope;
  }

  /** The terminal frame of a call: call.completed, call.error, or a unary call.responded. */
  nextFor(id: string, timeoutMs?: number): Promise<Envelope> {
    return this.next((e) => e.id === id, timeoutMs);
  }

  waitForClose(timeoutMs = 5000): Promise<CloseInfo> {
    if (this.closeInfo) return Promise.resolve(this.closeInfo);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`connection still open after ${timeoutMs} ms`)), timeoutMs);
      this.closeWaiters.push((info) => {
        clearTimeout(timer);
        resolve(info);
      });
    });
  }

  // Transport side ---------------------------------------------------------------

  /** Called by the transport with one encoded envelope from the server. */
  deliver(bytes: Uint8Array): void {
    const parsed = decodeEnvelope(this.codec, bytes);
    if (parsed.kind !== 'event') throw new Error(`server sent an invalid frame: ${parsed.kind === 'invalid' ? parsed.error.message : parsed.type}`);
    this.inbox.push(parsed.envelope);
  }

  closedBy(info: CloseInfo): void {
    if (this.closeInfo) return;
    this.closeInfo = info;
    for (const wake of this.closeWaiters.splice(0)) wake(info);
  }
}
