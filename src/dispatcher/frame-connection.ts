import { calleeEvents, closeCodes, decodeEnvelope, envelopes, RpcError, SHARED_STREAM_TYPE, type Envelope, type EventType, type ParseResult } from '../protocol/index.js';
import { duplicateCallId, truncate } from './admission.js';
import type { CallTable, CallTableStats } from './call-table.js';
import { frameOutlet, type Deliver } from './frame-outlet.js';
import { silentLogger, type Identity, type Logger } from './identity.js';
import type { DispatcherLimits } from './limits.js';
import type { LiveCall } from './live-call.js';
import type { OutboundGauge } from './outbound-gauge.js';
import { SharedStreams } from './shared-stream.js';
import type { FrameTransport, StreamEntry, StreamSink } from './transport.js';

export interface FrameConnectionOptions {
  readonly transport: FrameTransport;
  /** The connection's calls: admission, flow, and their lives. */
  readonly calls: CallTable;
  /** The connection's identity; `null` is anonymous. */
  readonly identity: Identity | null;
  readonly limits: DispatcherLimits;
  readonly logger?: Logger;
  /**
   * The bytes that wait on the connection's shared call streams (WTS-3), for a transport
   * whose calls otherwise each have their own stream; absent: no shared streams (a
   * WebSocket, or a callee that refuses them, WTS-1).
   */
  readonly sharedOutbound?: OutboundGauge;
}

export interface FrameConnectionStats extends CallTableStats {
  /** Frames for ids that are not live (e.g. call.aborted after the end), ignored. */
  readonly unknownIdFrames: number;
  /** Frames of an event type this version does not know, ignored (ENV-4). */
  readonly unknownTypeFrames: number;
  /** Callee events received from the caller, ignored (DIR-1). */
  readonly wrongDirectionFrames: number;
  readonly invalidFrames: number;
}

/**
 * The protocol's frames over one connection (spec/PROTOCOL.md §4–§5): decodes each
 * frame once and turns it into what it asks of the connection's calls (start one,
 * give it input, credit, abort), and each call's events back into frames. Frames
 * arrive on the connection itself (`receive`, WebSocket) or on a WebTransport stream
 * (`openStream`) that carries one call, or many once it asked to be shared
 * (./shared-stream.ts). It holds no call state: the CallTable does.
 */
export class FrameConnection {
  private readonly calls: CallTable;
  private readonly transport: FrameTransport;
  private readonly logger: Logger;
  private readonly viaConnection: Deliver;
  private counters = { unknownIdFrames: 0, unknownTypeFrames: 0, wrongDirectionFrames: 0, invalidFrames: 0 };
  private readonly shared: SharedStreams | undefined;

  constructor(private readonly options: FrameConnectionOptions) {
    this.calls = options.calls;
    this.transport = options.transport;
    this.logger = options.logger ?? silentLogger;
    // The connection has no per-call streams to end: `final` means nothing to it.
    this.viaConnection = (frame) => this.transport.send(frame);
    if (options.sharedOutbound) {
      this.shared = new SharedStreams(options.sharedOutbound, {
        isClosed: () => this.calls.isClosed,
        find: (id) => this.calls.find(id),
        decode: (bytes) => this.decode(bytes),
        dispatch: (envelope, bytes, deliver, beside) => this.dispatch(envelope, bytes, deliver, beside),
        rejectInvalid: (message, id, type, deliver, beside) => this.rejectInvalid(message, id, type, deliver, beside),
        encode: (value) => this.transport.codec.encode(value),
        logger: this.logger,
      });
    }
  }

  get stats(): FrameConnectionStats {
    return { ...this.calls.stats, ...this.counters };
  }

  /** Handles one encoded envelope from the caller, on the connection itself. */
  receive(bytes: Uint8Array): void {
    if (this.calls.isClosed) return;
    const parsed = this.decode(bytes);
    if (parsed?.kind === 'invalid') {
      if (parsed.error.callId === undefined) {
        // ENV-5: nothing to answer; the connection cannot be trusted to stay in step.
        this.transport.close(closeCodes.UNDECODABLE_FRAME, truncate(parsed.error.message, 120));
        return;
      }
      return this.rejectInvalid(parsed.error.message, parsed.error.callId, parsed.type, this.viaConnection, this.viaConnection);
    }
    if (parsed?.kind === 'event') this.dispatch(parsed.envelope, bytes.byteLength, this.viaConnection, this.viaConnection);
  }

  /**
   * A stream that carries one call (WT-1). Its first frame must be the call's
   * `call.requested`; the call answers on the stream, which ends after its terminal
   * event. A frame without a readable id resets this stream only (ENV-5, WT-3).
   */
  openStream(sink: StreamSink): StreamEntry {
    // A write that fails (the caller reset the stream) ends this stream's call, not the connection.
    const onStream: Deliver = (frame, final) =>
      sink.write(frame).then(
        () => {
          if (final) sink.end();
        },
        () => cancelBound(),
      );
    // Answers about other ids (a duplicate, a second request) must not end this stream, which belongs to its own call.
    const besideStream: Deliver = (frame) => onStream(frame, false);
    // The call this stream started, as itself: its id may since have ended (aborted from
    // another stream) and been started again on another stream, which this one must leave alone.
    let bound: LiveCall | undefined;
    let first = true;
    let open = true;
    // WTS-1: a stream whose first frame asks for it carries many calls from then on.
    let shared: StreamEntry | undefined;
    const boundCall = () => (bound !== undefined && this.calls.get(bound.id) === bound ? bound : undefined);
    const reset = (reason: string): void => {
      open = false;
      sink.reset(reason);
      cancelBound();
    };
    // WT-2: the caller reset its side (or it broke): an abort, which also drops what waits for credit.
    const cancelBound = (): void => {
      if (bound !== undefined && this.calls.find(bound.id) === bound) bound.cancel();
    };
    return {
      receive: (bytes) => {
        if (shared) return shared.receive(bytes);
        if (!open || this.calls.isClosed) return;
        if (first) {
          // WT-1 before everything: a stream is opened by its call's request, and by nothing else.
          first = false;
          const request = decodeEnvelope(this.transport.codec, bytes, this.options.limits.maxNestingDepth);
          if (request.kind === 'unknown-type' && request.type === SHARED_STREAM_TYPE && this.shared) {
            shared = this.shared.open(sink, request.id);
            return;
          }
          if (request.kind === 'invalid' && request.type === 'call.requested' && request.error.callId !== undefined) {
            // A request with a readable id but a bad field: answered on its stream (ENV-6, ID-4), which then ends.
            this.counters.invalidFrames++;
            const id = request.error.callId;
            return this.refuse(id, this.calls.get(id) ? duplicateCallId(id) : RpcError.of('INVALID_FRAME', request.error.message), onStream);
          }
          if (request.kind !== 'event' || (request.envelope.type !== 'call.requested' && request.envelope.type !== 'call.resume')) {
            this.counters.invalidFrames++;
            return reset('the first frame on a stream must be a call.requested (or a call.resume) with a readable id (WT-1)');
          }
          const id = request.envelope.id;
          // ID-2: a live id is refused on this new stream, which then ends; the live call is left alone.
          if (this.calls.get(id)) return this.refuse(id, duplicateCallId(id), onStream);
          const before = this.calls.find(id);
          this.dispatch(request.envelope, bytes.byteLength, onStream, besideStream);
          const after = this.calls.find(id);
          if (after !== before) bound = after;
          return;
        }
        const parsed = this.decode(bytes);
        if (parsed === undefined) return;
        if (parsed.kind === 'invalid' && parsed.error.callId === undefined) return reset(parsed.error.message);
        if (parsed.kind === 'invalid') return this.rejectInvalid(parsed.error.message, parsed.error.callId!, parsed.type, besideStream, besideStream);
        const envelope = parsed.envelope;
        if (envelope.type === 'call.requested' && envelope.id !== bound?.id) {
          // §5.4: one call per stream. The new id is refused here; the stream's own call runs on.
          return this.refuse(envelope.id, RpcError.of('INVALID_FRAME', 'a stream carries one call: open a new stream for a new call (§5.4)'), besideStream);
        }
        this.dispatch(envelope, bytes.byteLength, onStream, besideStream);
      },
      end: () => {
        if (shared) return shared.end();
        open = false;
        // WT-2: a half-close says "no more input" (as call.end would), not "abort": a
        // caller may close its side after the request and still read the whole answer.
        const call = boundCall();
        if (call?.input && !call.input.isEnded) call.endInput();
      },
      reset: () => {
        if (shared) return shared.reset();
        open = false;
        cancelBound();
      },
      whenReadable: () => shared?.whenReadable?.(),
    };
  }

  /** The transport's channel (or the shared streams', WTS-3) is below its bound again (BP-4). */
  drained(): void {
    this.calls.drained();
    this.shared?.drained();
  }

  /** The connection was closed: every live call is cancelled (ABT-4). */
  close(): void {
    this.calls.close('clean');
  }

  /** The connection was lost without a close (§4.9): resumable calls wait for their caller; the rest are cancelled. */
  lost(): void {
    this.calls.close('lost');
  }

  /** Graceful shutdown: refuse new calls, give live ones `graceMs` to end, then cancel the rest with UNAVAILABLE. */
  shutdown(graceMs: number): Promise<void> {
    return this.calls.shutdown(graceMs);
  }

  /** Decodes one frame; unknown types and wrong-direction events are counted and dropped here. */
  private decode(bytes: Uint8Array): Exclude<ParseResult, { kind: 'unknown-type' }> | undefined {
    const parsed = decodeEnvelope(this.transport.codec, bytes, this.options.limits.maxNestingDepth);
    if (parsed.kind === 'unknown-type') {
      this.counters.unknownTypeFrames++;
      this.logger.debug('ignored frame of unknown type', { type: parsed.type });
      return undefined;
    }
    // DIR-1 and DIR-2: an event of the callee's is ignored whatever its payload.
    const type = parsed.kind === 'event' ? parsed.envelope.type : parsed.type;
    if (type !== undefined && calleeEvents.has(type as EventType)) {
      this.counters.wrongDirectionFrames++;
      return undefined;
    }
    if (parsed.kind === 'invalid') this.counters.invalidFrames++;
    return parsed;
  }

  /** `deliver`: the call's own way out; `beside`: for answers that must not end a per-call stream. */
  private dispatch(envelope: Envelope, frameBytes: number, deliver: Deliver, beside: Deliver): void {
    const { id } = envelope;
    switch (envelope.type) {
      case 'call.requested': {
        const outlet = frameOutlet(this.transport.codec, this.options.limits, id, deliver);
        const started = this.calls.start({ id, payload: envelope.payload, sizeBytes: frameBytes }, this.options.identity, outlet);
        // ID-2: the refusal of a live id must not end the stream the live call may be using.
        if (started instanceof RpcError) this.refuse(id, started, started.code === 'DUPLICATE_CALL_ID' ? beside : deliver);
        return;
      }
      case 'call.resume': {
        // §4.9: a call taken up from a lost connection answers here from now on.
        const outlet = frameOutlet(this.transport.codec, this.options.limits, id, deliver);
        const resumed = this.calls.resume(id, envelope.payload, this.options.identity, outlet);
        if (resumed instanceof RpcError) this.refuse(id, resumed, resumed.code === 'DUPLICATE_CALL_ID' ? beside : deliver);
        return;
      }
      case 'call.aborted': {
        const call = this.calls.find(id);
        if (!call) return void this.counters.unknownIdFrames++; // ABT-3: a silent no-op
        return call.cancel(); // ABT-1, ABT-2: cancel now, send nothing more
      }
      case 'call.input':
      case 'call.end': {
        const call = this.calls.get(id);
        // IN-4: input for a call that has ended (it may have crossed the terminal event) is dropped.
        if (!call) return void this.counters.unknownIdFrames++;
        if (envelope.type === 'call.end') return call.endInput(envelope.payload.seq);
        return call.pushInput(envelope.payload.item, frameBytes, envelope.payload.seq);
      }
      case 'call.credit': {
        // CR-4: the caller grants more output.
        if (!this.calls.find(id)?.credit(envelope.payload.bytes, envelope.payload.seq)) this.counters.unknownIdFrames++;
        return;
      }
      default:
        return; // callee events never get here (decode drops them, DIR-1)
    }
  }

  private rejectInvalid(message: string, callId: string, type: string | undefined, deliver: Deliver, beside: Deliver): void {
    const live = this.calls.get(callId);
    // ID-4: a request reusing a live id, malformed or not, leaves that call alone.
    if (live && type === 'call.requested') return this.refuse(callId, duplicateCallId(callId), beside);
    const error = RpcError.of('INVALID_FRAME', message);
    if (live) return live.terminate(error);
    // ERR-2: a call that has ended, its frames still waiting for credit, hears nothing after its terminal event.
    if (this.calls.find(callId)) return;
    this.refuse(callId, error, deliver);
  }

  /** A `call.error` for an id that has no call (refused, or unknown): its only frame. */
  private refuse(id: string, error: RpcError, deliver: Deliver): void {
    if (this.calls.isClosed) return;
    deliver(this.transport.codec.encode(envelopes.error(id, error.toPayload())), true).then(undefined, (cause: unknown) => this.calls.lost(cause));
  }
}
