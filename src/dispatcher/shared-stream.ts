import { sharedStreamFrame, type Envelope, type ParseResult } from '../protocol/index.js';
import type { Deliver } from './frame-outlet.js';
import type { Logger } from './identity.js';
import type { LiveCall } from './live-call.js';
import type { OutboundGauge } from './outbound-gauge.js';
import type { StreamEntry, StreamSink } from './transport.js';

/** What a shared stream needs of its FrameConnection: the same frame handling as a WebSocket's. */
export interface SharedStreamHost {
  isClosed(): boolean;
  find(id: string): LiveCall | undefined;
  decode(bytes: Uint8Array): Exclude<ParseResult, { kind: 'unknown-type' }> | undefined;
  dispatch(envelope: Envelope, frameBytes: number, deliver: Deliver, beside: Deliver): void;
  rejectInvalid(message: string, callId: string, type: string | undefined, deliver: Deliver, beside: Deliver): void;
  encode(value: unknown): Uint8Array;
  readonly logger: Logger;
}

/**
 * A session's shared call streams (spec/PROTOCOL.md §5.4, WTS-1 to WTS-5): streams
 * that carry the frames of many calls, as a WebSocket does, each frame acting on its
 * id. Their unsent bytes together are bounded as one WebSocket's are (WTS-3): over
 * `maxOutboundBytesPerConnection` the session's calls stop being pulled and no shared
 * stream is read until half of them drained.
 */
export class SharedStreams {
  private drainWaiters: (() => void)[] = [];

  constructor(
    private readonly gauge: OutboundGauge,
    private readonly host: SharedStreamHost,
  ) {}

  /** The gauge drained: shared streams are read again. */
  drained(): void {
    const waiters = this.drainWaiters;
    this.drainWaiters = [];
    for (const wake of waiters) wake();
  }

  /** Takes over a stream whose first frame asked for sharing, and acknowledges it (WTS-1). */
  open(sink: StreamSink, streamId: string): StreamEntry {
    const { host, gauge } = this;
    // The calls this stream started, so that its end or reset ends them (WTS-4). Kept as
    // the call itself, not its id: an id this stream started may since have ended (its
    // abort sent on another stream) and been started again on another stream, which owns
    // that new call; an id is not proof of ownership.
    const calls = new Map<string, LiveCall>();
    const owned = (id: string): LiveCall | undefined => {
      const call = host.find(id);
      return call !== undefined && call === calls.get(id) ? call : undefined;
    };
    let reading = true;
    let callerDone = false;
    let ended = false;
    let broken = false;
    const cancelAll = (): void => {
      for (const id of calls.keys()) owned(id)?.cancel();
      calls.clear();
    };
    const endIfIdle = (): void => {
      if (!callerDone || ended || broken) return;
      for (const id of [...calls.keys()]) if (!owned(id)) calls.delete(id);
      if (calls.size > 0) return;
      ended = true;
      sink.end();
    };
    // Every byte waits in the gauge until the stream took it (WTS-3); a write that fails
    // (the caller reset the stream) ends the stream's calls, never the session.
    const send = (frame: Uint8Array): Promise<void> => {
      const n = frame.byteLength;
      gauge.add(n);
      return sink.write(frame).then(
        () => gauge.taken(n),
        () => {
          gauge.taken(n);
          if (!broken) {
            broken = true;
            cancelAll();
          }
        },
      );
    };
    const beside: Deliver = (frame) => send(frame);
    const deliverFor =
      (id: string): Deliver =>
      (frame, final) =>
        send(frame).then(() => {
          if (!final) return;
          calls.delete(id);
          endIfIdle();
        });
    const reset = (reason: string): void => {
      reading = false;
      broken = true;
      sink.reset(reason);
      cancelAll();
    };
    void send(host.encode(sharedStreamFrame(streamId)));
    return {
      receive: (bytes) => {
        if (!reading || host.isClosed()) return;
        const parsed = host.decode(bytes);
        if (parsed === undefined) return;
        // ENV-5 on a shared stream: that stream (and its calls) end, not the session (WTS-4).
        if (parsed.kind === 'invalid' && parsed.error.callId === undefined) return reset(parsed.error.message);
        if (parsed.kind === 'invalid') {
          const id = parsed.error.callId!;
          return host.rejectInvalid(parsed.error.message, id, parsed.type, deliverFor(id), beside);
        }
        const { envelope } = parsed;
        if (envelope.type === 'call.requested' || envelope.type === 'call.resume') {
          const before = host.find(envelope.id);
          host.dispatch(envelope, bytes.byteLength, deliverFor(envelope.id), beside);
          // A refused duplicate stays with the stream that started it; a new call under the id is this stream's.
          const after = host.find(envelope.id);
          if (after !== undefined && after !== before) calls.set(envelope.id, after);
          return;
        }
        host.dispatch(envelope, bytes.byteLength, beside, beside);
        // ABT-2: an aborted call sends nothing more, so its end is now.
        if (envelope.type === 'call.aborted' && !owned(envelope.id)) calls.delete(envelope.id);
      },
      end: () => {
        // WTS-4: the caller sends nothing more; the stream ends once its calls have.
        reading = false;
        callerDone = true;
        endIfIdle();
      },
      reset: () => {
        // WT-2: a reset (or a broken stream) aborts every call it carried.
        reading = false;
        broken = true;
        cancelAll();
      },
      whenReadable: () => (gauge.congested ? new Promise<void>((resolve) => this.drainWaiters.push(resolve)) : undefined),
    };
  }
}
