import {
  calleeEvents,
  closeCodes,
  decodeEnvelope,
  describeZodError,
  envelopes,
  outputFrameEncoder,
  RpcError,
  type Envelope,
  type EnvelopeOf,
  type EventType,
  type ParseResult,
} from '../protocol/index.js';
import { checkAccess } from './access.js';
import { bindLogger, silentLogger, type Identity, type Logger } from './identity.js';
import type { IdentityLedger } from './identity-ledger.js';
import type { SessionLimits } from './limits.js';
import { InputStream } from './input-stream.js';
import { LiveCall, type CallHost, type Outlet } from './live-call.js';
import { isUnary, type CallContext, type Operation } from './operation.js';
import { pumpStream, pumpUnary } from './pump.js';
import type { Registry } from './registry.js';
import type { SessionTransport, StreamEntry, StreamSink } from './transport.js';
import { toWireError } from './wire-error.js';

export interface SessionOptions {
  readonly registry: Registry;
  readonly transport: SessionTransport;
  /** The connection's identity; `null` (the default) is anonymous. */
  readonly identity?: Identity | null;
  /** Resolves a per-call `auth_token` (spec/PROTOCOL.md §10); unknown tokens → undefined. */
  readonly authenticate?: ((token: string) => Identity | undefined) | undefined;
  readonly limits: SessionLimits;
  readonly logger?: Logger;
  /** Validate every output against the operation's output schema (RES-4). Default true. */
  readonly validateOutput?: boolean;
  /** Called once, when the session has closed. */
  readonly onClose?: () => void;
  /** The dispatcher's count of live calls per identity, shared by its sessions (LIM-3); none: no cap. */
  readonly ledger?: IdentityLedger;
  /** Whether a call to `op` is an exec session (LIM-3's `maxExecSessionsPerIdentity`). */
  readonly isExecSession?: (op: Operation) => boolean;
}

export interface SessionStats {
  readonly liveCalls: number;
  readonly callsStarted: number;
  /** Frames for ids that are not live (e.g. call.aborted after the end), ignored. */
  readonly unknownIdFrames: number;
  /** Frames of an event type this version does not know, ignored (ENV-4). */
  readonly unknownTypeFrames: number;
  /** Callee events received from the caller, ignored (DIR-1). */
  readonly wrongDirectionFrames: number;
  readonly invalidFrames: number;
}

/**
 * One connection's calls: admission, checks, the pump, abort and deadlines
 * (spec/PROTOCOL.md §4–§9). Calls run concurrently; each is correlated by id only.
 * Frames arrive on the connection itself (`receive`, WebSocket) or on a stream
 * that carries one call (`openStream`, WebTransport); either way each frame is
 * decoded here, once.
 */
export class Session implements CallHost {
  private readonly calls = new Map<string, LiveCall>();
  /** Calls that have ended with frames still waiting for the caller's credit (§4.8). */
  private readonly draining = new Map<string, LiveCall>();
  private readonly limits: SessionLimits;
  private readonly logger: Logger;
  private readonly connection: Outlet;
  private accepting = true;
  private closed = false;
  private idleWaiters: (() => void)[] = [];
  /** Bytes of every call handed to the connection's one channel and not yet taken (BP-4). */
  private outbound = 0;
  /** Pull sources paused because the whole connection, not their own call, is full. */
  private readonly waitingOnConnection = new Set<LiveCall>();
  /** What each live call holds of its identity's caps, given back when it ends (LIM-3). */
  private readonly identitySlots = new Map<LiveCall, () => void>();
  private counters = { callsStarted: 0, unknownIdFrames: 0, unknownTypeFrames: 0, wrongDirectionFrames: 0, invalidFrames: 0 };

  constructor(private readonly options: SessionOptions) {
    this.limits = options.limits;
    this.logger = options.logger ?? silentLogger;
    // The transport is the connection's outlet as it is (it has no per-call streams to end).
    this.connection = options.transport;
  }

  get stats(): SessionStats {
    return { liveCalls: this.calls.size, ...this.counters };
  }

  /** Handles one encoded envelope from the caller, on the connection itself. */
  receive(bytes: Uint8Array): void {
    if (this.closed) return;
    const parsed = this.decode(bytes);
    if (parsed?.kind === 'invalid') {
      if (parsed.error.callId === undefined) {
        // ENV-5: nothing to answer; the connection cannot be trusted to stay in step.
        this.options.transport.close(closeCodes.UNDECODABLE_FRAME, truncate(parsed.error.message, 120));
        return;
      }
      return this.rejectInvalid(parsed.error.message, parsed.error.callId, parsed.type, this.connection);
    }
    if (parsed?.kind === 'event') this.dispatch(parsed.envelope, bytes.byteLength, this.connection);
  }

  /**
   * A stream that carries one call (WT-1). Its first frame must be the call's
   * `call.requested`; the session binds the call to the stream when it admits it,
   * answers on the stream, and ends the stream after the terminal event. A frame
   * without a readable id resets this stream only (ENV-5, WT-3).
   */
  openStream(sink: StreamSink): StreamEntry {
    // A write that fails (the caller reset the stream) ends this stream's call, not the session.
    const outlet: Outlet = {
      send: (frame, final) =>
        sink.write(frame).then(
          () => {
            if (final) sink.end();
          },
          () => cancelBound(),
        ),
    };
    let bound: string | undefined;
    let first = true;
    let open = true;
    const reset = (reason: string): void => {
      open = false;
      sink.reset(reason);
      cancelBound();
    };
    // WT-2: the caller reset its side (or it broke) before the call ended: that is an abort.
    const cancelBound = (): void => {
      const call = bound === undefined ? undefined : this.calls.get(bound);
      if (call?.outlet === outlet) call.cancel();
    };
    return {
      receive: (bytes) => {
        if (!open || this.closed) return;
        if (first) {
          // WT-1 before everything: a stream is opened by its call's request, and by nothing else.
          first = false;
          const request = decodeEnvelope(this.options.transport.codec, bytes, this.limits.maxNestingDepth);
          if (request.kind === 'invalid' && request.type === 'call.requested' && request.error.callId !== undefined) {
            // A request with a readable id but a bad field: answered on its stream (ENV-6, ID-4), which then ends.
            this.counters.invalidFrames++;
            const id = request.error.callId;
            return this.sendError(id, this.calls.has(id) ? this.duplicate(id) : RpcError.of('INVALID_FRAME', request.error.message), outlet);
          }
          if (request.kind !== 'event' || request.envelope.type !== 'call.requested') {
            this.counters.invalidFrames++;
            return reset('the first frame on a stream must be a call.requested with a readable id (WT-1)');
          }
          const id = request.envelope.id;
          // ID-2: a live id is refused on this new stream, which then ends; the live call is left alone.
          if (this.calls.has(id)) return this.sendError(id, this.duplicate(id), outlet);
          bound = id;
          return this.dispatch(request.envelope, bytes.byteLength, outlet);
        }
        const parsed = this.decode(bytes);
        if (parsed === undefined) return;
        if (parsed.kind === 'invalid' && parsed.error.callId === undefined) return reset(parsed.error.message);
        // An answer about another id must not end this stream, which belongs to its own call.
        if (parsed.kind === 'invalid') return this.rejectInvalid(parsed.error.message, parsed.error.callId!, parsed.type, this.connectionless(outlet));
        const envelope = parsed.envelope;
        if (envelope.type === 'call.requested' && envelope.id !== bound) {
          // §5.4: one call per stream. The new id is refused here; the stream's own call runs on.
          return this.sendError(envelope.id, RpcError.of('INVALID_FRAME', 'a stream carries one call: open a new stream for a new call (§5.4)'), this.connectionless(outlet));
        }
        this.dispatch(envelope, bytes.byteLength, outlet);
      },
      end: () => {
        open = false;
        // WT-2: a half-close says "no more input" (as call.end would), not "abort": a
        // caller may close its side after the request and still read the whole answer.
        const call = bound === undefined ? undefined : this.calls.get(bound);
        if (call?.outlet === outlet && call.input && !call.input.isEnded) call.input.end();
      },
      reset: () => {
        open = false;
        cancelBound();
      },
    };
  }

  /** The connection is gone: every live call is cancelled (ABT-4). */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.accepting = false;
    this.draining.clear();
    for (const call of [...this.calls.values()]) call.cancel();
    this.options.onClose?.();
  }

  /**
   * Graceful shutdown: refuse new calls, give live ones `graceMs` to end, then
   * cancel the rest with UNAVAILABLE.
   */
  async shutdown(graceMs: number): Promise<void> {
    this.accepting = false;
    if (this.calls.size > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, graceMs);
        this.idleWaiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    for (const call of [...this.calls.values()]) call.fail(RpcError.of('UNAVAILABLE', 'the server is shutting down'), true);
  }

  /** Decodes one frame; unknown types and wrong-direction events are counted and dropped here. */
  private decode(bytes: Uint8Array): Exclude<ParseResult, { kind: 'unknown-type' }> | undefined {
    const parsed = decodeEnvelope(this.options.transport.codec, bytes, this.limits.maxNestingDepth);
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

  private dispatch(envelope: Envelope, frameBytes: number, outlet: Outlet): void {
    switch (envelope.type) {
      case 'call.requested':
        this.admit(envelope, frameBytes, outlet);
        return;
      case 'call.aborted': {
        const call = this.calls.get(envelope.id);
        // An ended call's frames that still wait for credit are dropped: the caller wants none.
        if (this.draining.delete(envelope.id)) return;
        if (!call) {
          this.counters.unknownIdFrames++; // ABT-3: a silent no-op
          return;
        }
        call.cancel(); // ABT-1, ABT-2: cancel now, send nothing more
        return;
      }
      case 'call.input':
      case 'call.end': {
        const call = this.calls.get(envelope.id);
        // IN-4: input for a call that has ended (it may have crossed the terminal event) is dropped.
        if (!call) return void this.counters.unknownIdFrames++;
        const input = call.input;
        if (!input) return call.fail(RpcError.of('INVALID_FRAME', `${call.op.name} takes no input stream`), true); // IN-2
        if (input.isEnded) return call.fail(RpcError.of('INVALID_FRAME', 'input after call.end'), true); // IN-3
        if (envelope.type === 'call.end') return input.end();
        if (!input.hasCredit) return call.fail(RpcError.of('CREDIT_EXCEEDED', 'input beyond the credit the callee granted'), true); // CR-2
        const item = call.op.inputStream!.safeParse(envelope.payload.item);
        if (!item.success) return call.fail(RpcError.of('INVALID_INPUT', describeZodError(item.error, 'item')), true); // IN-1
        input.push(item.data, frameBytes);
        return;
      }
      case 'call.credit': {
        // CR-4: the caller grants more output; frames that waited for it go out now.
        const call = this.calls.get(envelope.id) ?? this.draining.get(envelope.id);
        if (call?.outputCredit === undefined) return void this.counters.unknownIdFrames++;
        call.outputCredit += envelope.payload.bytes;
        this.flush(call);
        return;
      }
      default:
        return; // callee events never get here (decode drops them, DIR-1)
    }
  }

  private rejectInvalid(message: string, callId: string, type: string | undefined, outlet: Outlet): void {
    const live = this.calls.get(callId);
    if (live && type === 'call.requested') {
      // ID-4: a request reusing a live id, malformed or not, leaves that call alone.
      return this.sendError(callId, this.duplicate(callId), this.connectionless(outlet));
    }
    const error = RpcError.of('INVALID_FRAME', message);
    if (live) live.fail(error, true);
    else this.sendError(callId, error, outlet);
  }

  /** spec/PROTOCOL.md §4.1: REQ-1 … REQ-7, in order. */
  private admit(envelope: EnvelopeOf<'call.requested'>, frameBytes: number, outlet: Outlet): void {
    const { id, payload } = envelope;
    // ID-2: the answer to a duplicate must not end the stream the live call may be using.
    if (this.calls.has(id)) return this.sendError(id, this.duplicate(id), this.connectionless(outlet));
    if (!this.accepting) return this.sendError(id, RpcError.of('UNAVAILABLE', 'the server is shutting down'), outlet);
    if (this.calls.size >= this.limits.maxCallsInFlight) {
      return this.sendError(id, RpcError.of('LIMIT_EXCEEDED', `at most ${this.limits.maxCallsInFlight} calls may be in flight on one connection`), outlet);
    }
    if (frameBytes > this.limits.maxInputBytes) {
      return this.sendError(id, RpcError.of('PAYLOAD_TOO_LARGE', `request of ${frameBytes} bytes exceeds maxInputBytes ${this.limits.maxInputBytes}`), outlet);
    }
    const op = this.options.registry.visible(payload.operationId);
    if (!op) {
      return this.sendError(id, RpcError.of('NOT_FOUND', `unknown operation: ${truncate(payload.operationId, 200)}`), outlet);
    }
    let identity = this.options.identity ?? null;
    if (payload.auth_token !== undefined) {
      const fromToken = this.options.authenticate?.(payload.auth_token);
      if (!fromToken) return this.sendError(id, RpcError.of('FORBIDDEN', 'invalid token'), outlet);
      identity = fromToken;
    }
    const denied = checkAccess(op.access, identity);
    if (denied) return this.sendError(id, denied, outlet);
    const shape = isUnary(op) ? 'unary' : 'stream';
    if (payload.expect !== undefined && payload.expect !== shape) {
      return this.sendError(id, RpcError.of('INVALID_OPERATION_TYPE', `${op.name} is a ${op.kind}: expect "${shape}", not "${payload.expect}"`), outlet);
    }
    const input = op.input.safeParse(payload.input ?? null);
    if (!input.success) return this.sendError(id, RpcError.of('INVALID_INPUT', describeZodError(input.error)), outlet);
    // LIM-3: last, so a call that would be refused anyway hears its own reason.
    const slot = this.options.ledger?.take(identity, this.options.isExecSession?.(op) ?? false);
    if (slot instanceof RpcError) return this.sendError(id, slot, outlet);

    // Output credit applies to streams; a unary call's one answer is never held (§4.8).
    this.start(id, op, input.data, identity, payload.deadline_ms, outlet, isUnary(op) ? undefined : payload.credit, slot);
  }

  private start(id: string, op: Operation, input: unknown, identity: Identity | null, deadlineMs: number | undefined, outlet: Outlet, credit: number | undefined, slot: (() => void) | undefined): void {
    const call = new LiveCall(id, op, this.limits.maxBufferedBytesPerCall, outlet, this);
    if (slot) this.identitySlots.set(call, slot);
    this.calls.set(id, call);
    this.draining.delete(id);
    this.counters.callsStarted++;
    let deadlineAt: number | undefined;
    if (deadlineMs !== undefined) {
      const budget = Math.min(deadlineMs, this.limits.maxDeadlineMs);
      deadlineAt = Date.now() + budget;
      call.setDeadline(budget); // DL-1
    }
    if (op.inputStream) {
      // IN-1, CR-1: the first grant says the call is admitted, and how much input may come.
      const window = this.limits.maxBufferedBytesPerCall;
      call.input = new InputStream(window, (bytes) => this.grant(call, bytes));
      this.grant(call, window);
    } else if (credit !== undefined) {
      this.grant(call, 0); // CR-1: admitted; no input to grant
    }
    call.outputCredit = credit;
    const sessionLogger = this.logger;
    let logger: CallContext['logger'] | undefined;
    const ctx: CallContext = {
      callId: id,
      operation: op.name,
      identity,
      get signal() {
        return call.signal;
      },
      // Bound when first read, as the signal is: most handlers never log.
      get logger() {
        return (logger ??= bindLogger(sessionLogger, { callId: id, operation: op.name }));
      },
      deadlineAt,
      input: call.input,
    };
    if (isUnary(op)) pumpUnary(call, op, input, ctx);
    else pumpStream(call, op, input, ctx);
  }

  // CallHost: what a LiveCall asks of its session ------------------------------

  checkOutput(call: LiveCall, output: unknown): { ok: true; value: unknown } | { ok: false; error: RpcError } {
    if (this.options.validateOutput === false) return { ok: true, value: output };
    const checked = call.op.output.safeParse(output);
    if (checked.success) return { ok: true, value: checked.data };
    return { ok: false, error: new RpcError('INTERNAL', `handler output fails the output schema: ${describeZodError(checked.error, 'output')}`) };
  }

  wireError(call: LiveCall, error: unknown, byMachinery: boolean): RpcError {
    // Machinery errors (timeout, overflow, shutdown) are protocol codes and go out
    // as they are; handler errors pass through the declared-codes filter (ERR-4).
    if (byMachinery) return RpcError.from(error);
    const wire = toWireError(call.op, error);
    this.logUnexpected(call, error, wire);
    return wire;
  }

  send(call: LiveCall, envelope: Envelope, final: boolean): void {
    this.write(call, call.id, envelope, final, call.outlet);
  }

  ended(call: LiveCall): void {
    this.identitySlots.get(call)?.();
    this.identitySlots.delete(call);
    if (this.calls.get(call.id) === call) this.calls.delete(call.id);
    this.waitingOnConnection.delete(call);
    if (this.calls.size === 0) {
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const wake of waiters) wake();
    }
  }

  // ---------------------------------------------------------------------------

  /** A `call.credit` to the caller: never held for credit itself, so it can never deadlock. */
  private grant(call: LiveCall, bytes: number): void {
    this.transmit(call, call.outlet, this.options.transport.codec.encode(envelopes.credit(call.id, bytes)), false);
  }

  /**
   * Sends what may go (§4.8): frames leave in order; a non-terminal output frame
   * needs positive credit and is charged its size; a terminal frame needs none but
   * waits behind the frames before it.
   */
  private flush(call: LiveCall): void {
    while (call.held.length > 0) {
      const head = call.held[0]!;
      if (!head.final && call.outputCredit! <= 0) break;
      call.held.shift();
      if (!head.final) call.outputCredit! -= head.bytes.byteLength;
      this.transmit(call, call.outlet, head.bytes, head.final, true);
    }
    if (call.held.length === 0) this.draining.delete(call.id);
    else if (call.ended) this.draining.set(call.id, call);
  }

  private duplicate(id: string): RpcError {
    return RpcError.of('DUPLICATE_CALL_ID', `call id "${truncate(id, 40)}" is already live on this connection`);
  }

  /** An outlet that writes without ending a stream: for answers that are not the stream's own terminal event. */
  private connectionless(outlet: Outlet): Outlet {
    return { send: (frame) => outlet.send(frame, false) };
  }

  private sendError(id: string, error: RpcError, outlet: Outlet): void {
    this.write(undefined, id, envelopes.error(id, error.toPayload()), true, outlet);
  }

  private write(call: LiveCall | undefined, id: string, envelope: Envelope, final: boolean, outlet: Outlet): void {
    if (this.closed) return;
    const codec = this.options.transport.codec;
    let bytes: Uint8Array;
    try {
      // A stream's output frames share their envelope's bytes up to the output (outputFrameEncoder).
      if (call && envelope.type === 'call.responded' && !isUnary(call.op)) bytes = (call.outputFrames ??= outputFrameEncoder(codec, id))(envelope.payload.output);
      else bytes = codec.encode(envelope);
    } catch (error) {
      // e.g. a BigInt under the JSON codec: the call fails, the connection lives.
      const message = `output cannot be encoded with ${codec.name}: ${error instanceof Error ? error.message : String(error)}`;
      const failure = new RpcError('INTERNAL', message);
      if (call && !call.ended) call.fail(failure, true);
      else if (envelope.type !== 'call.error') this.write(undefined, id, envelopes.error(id, failure.toPayload()), true, outlet);
      return;
    }
    const size = bytes.byteLength;
    const refusal = size > this.limits.maxFrameBytes ? `an output frame of ${size} bytes exceeds maxFrameBytes ${this.limits.maxFrameBytes}` : this.tooDeep(bytes);
    if (refusal !== undefined) {
      // LIM-1, LIM-2: the callee never sends what the peer must refuse; the call ends, the connection serves on.
      const error = new RpcError('INTERNAL', refusal);
      if (call && !call.ended) call.fail(error, true);
      else this.write(undefined, id, envelopes.error(id, error.toPayload()), true, outlet); // a terminal answer: its call ended already
      return;
    }
    if (call?.outputCredit !== undefined && envelope.type !== 'call.credit') {
      // The common case, kept off the queue: nothing waits, and there is credit (or no need of it).
      if (call.held.length === 0 && (final || call.outputCredit > 0)) {
        if (!final) call.outputCredit -= size;
        return this.transmit(call, outlet, bytes, final);
      }
      call.held.push({ bytes, final });
      call.pendingBytes += size;
      return this.flush(call);
    }
    this.transmit(call, outlet, bytes, final);
  }

  /** Why the peer would refuse this frame undecoded for its depth (LIM-2), or undefined. */
  private tooDeep(bytes: Uint8Array): string | undefined {
    const max = this.limits.maxNestingDepth;
    try {
      this.options.transport.codec.checkNesting(bytes, max);
      return undefined;
    } catch {
      return `an output frame would nest more than maxNestingDepth ${max} maps and arrays`;
    }
  }

  get congested(): boolean {
    return this.outbound >= this.limits.maxOutboundBytesPerConnection;
  }

  waitUncongested(call: LiveCall): void {
    this.waitingOnConnection.add(call);
  }

  /** Hands one frame to the outlet, counting its bytes against the call and the connection until taken (§8). */
  private transmit(call: LiveCall | undefined, outlet: Outlet, bytes: Uint8Array, final: boolean, counted = false): void {
    const size = bytes.byteLength;
    if (call && !counted) call.pendingBytes += size;
    // BP-4 counts what shares the connection's one channel (WebSocket); a WebTransport
    // stream has its own flow control, and one stream's slow reader must not stall another.
    const shared = outlet === this.connection ? size : 0;
    this.outbound += shared;
    const taken = (): void => {
      this.outbound -= shared;
      call?.released(size);
      // Woken at half the bound, not just under it: at the bound, every frame taken would
      // wake thousands of paused calls for the one frame's room (measured: 10,000
      // subscriptions fell from 133,000 to 5,000 items/s).
      if (this.waitingOnConnection.size > 0 && this.outbound <= this.limits.maxOutboundBytesPerConnection / 2) {
        const waiting = [...this.waitingOnConnection];
        this.waitingOnConnection.clear();
        for (const c of waiting) c.roomOnConnection();
      }
    };
    outlet.send(bytes, final).then(taken, (error: unknown) => {
      taken();
      this.logger.debug('send failed; closing session', { error: String(error) });
      this.close();
    });
  }

  private logUnexpected(call: LiveCall, error: unknown, wire: RpcError): void {
    if (wire.code !== 'INTERNAL') return;
    this.logger.error('handler failed', {
      callId: call.id,
      operation: call.op.name,
      error: error instanceof Error ? (error.stack ?? error.message) : String(error),
    });
  }
}

function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}…`;
}
