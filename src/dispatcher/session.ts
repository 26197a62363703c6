import {
  calleeEvents,
  closeCodes,
  decodeEnvelope,
  describeZodError,
  frames,
  limits as protocolLimits,
  RpcError,
  type Envelope,
  type EnvelopeOf,
  type EventType,
} from '../protocol/index.js';
import { checkAccess } from './access.js';
import { bindLogger, silentLogger, type Identity, type Logger } from './identity.js';
import { LiveCall } from './live-call.js';
import { isUnary, type CallContext, type Operation } from './operation.js';
import { pumpStream, pumpUnary, type PumpSink } from './pump.js';
import type { Registry } from './registry.js';
import type { SessionTransport } from './transport.js';
import { toWireError } from './wire-error.js';

export interface SessionLimits {
  /** Largest frame either side sends; an output that encodes larger ends its call (§9, LIM-1). */
  readonly maxFrameBytes: number;
  readonly maxInputBytes: number;
  readonly maxCallsInFlight: number;
  readonly maxBufferedBytesPerCall: number;
  readonly maxDeadlineMs: number;
}

export interface SessionOptions {
  readonly registry: Registry;
  readonly transport: SessionTransport;
  /** The connection's identity; `null` (the default) is anonymous. */
  readonly identity?: Identity | null;
  /** Resolves a per-call `auth_token` (spec/PROTOCOL.md §10); unknown tokens → undefined. */
  readonly authenticate?: (token: string) => Identity | undefined;
  readonly limits?: Partial<SessionLimits>;
  readonly logger?: Logger;
  /** Validate every output against the operation's output schema (RES-4). Default true. */
  readonly validateOutput?: boolean;
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
 */
export class Session implements PumpSink {
  private readonly calls = new Map<string, LiveCall>();
  private readonly limits: SessionLimits;
  private readonly logger: Logger;
  private accepting = true;
  private closed = false;
  private idleWaiters: (() => void)[] = [];
  private counters = { callsStarted: 0, unknownIdFrames: 0, unknownTypeFrames: 0, wrongDirectionFrames: 0, invalidFrames: 0 };

  constructor(private readonly options: SessionOptions) {
    this.limits = {
      maxFrameBytes: options.limits?.maxFrameBytes ?? protocolLimits.maxFrameBytes,
      maxInputBytes: options.limits?.maxInputBytes ?? protocolLimits.maxInputBytes,
      maxCallsInFlight: options.limits?.maxCallsInFlight ?? protocolLimits.maxCallsInFlight,
      maxBufferedBytesPerCall: options.limits?.maxBufferedBytesPerCall ?? protocolLimits.maxBufferedBytesPerCall,
      maxDeadlineMs: options.limits?.maxDeadlineMs ?? protocolLimits.maxDeadlineMs,
    };
    this.logger = options.logger ?? silentLogger;
  }

  get stats(): SessionStats {
    return { liveCalls: this.calls.size, ...this.counters };
  }

  /** Whether `id` names a live call (ID-1, ID-3). */
  isLive(id: string): boolean {
    return this.calls.has(id);
  }

  /** Handles one encoded envelope from the caller. */
  receive(bytes: Uint8Array): void {
    if (this.closed) return;
    const parsed = decodeEnvelope(this.options.transport.codec, bytes);
    switch (parsed.kind) {
      case 'unknown-type':
        this.counters.unknownTypeFrames++;
        this.logger.debug('ignored frame of unknown type', { type: parsed.type });
        return;
      case 'invalid':
        // DIR-1 before ENV-6: an event of the callee's is ignored whatever its payload.
        if (parsed.type !== undefined && calleeEvents.has(parsed.type as EventType)) {
          this.counters.wrongDirectionFrames++;
          return;
        }
        this.counters.invalidFrames++;
        this.rejectInvalid(parsed.error.message, parsed.error.callId, parsed.type);
        return;
      case 'event':
        this.dispatch(parsed.envelope, bytes.byteLength);
        return;
    }
  }

  /**
   * Cancels one live call as `call.aborted` would (ABT-1), for transports where the
   * caller can abort without a frame, such as resetting a WebTransport stream (WT-2).
   */
  abortCall(id: string): void {
    const call = this.calls.get(id);
    if (call) this.endCall(call, true);
  }

  /** The connection is gone: every live call is cancelled (ABT-4). */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.accepting = false;
    for (const call of [...this.calls.values()]) this.endCall(call, true);
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
    for (const call of [...this.calls.values()]) {
      this.fail(call, RpcError.of('UNAVAILABLE', 'the server is shutting down'), true);
    }
  }

  private dispatch(envelope: Envelope, frameBytes: number): void {
    switch (envelope.type) {
      case 'call.requested':
        this.admit(envelope, frameBytes);
        return;
      case 'call.aborted': {
        const call = this.calls.get(envelope.id);
        if (!call) {
          this.counters.unknownIdFrames++; // ABT-3: a silent no-op
          return;
        }
        this.endCall(call, true); // ABT-1, ABT-2: cancel now, send nothing more
        return;
      }
      case 'call.responded':
      case 'call.completed':
      case 'call.error':
        this.counters.wrongDirectionFrames++; // DIR-1
        return;
    }
  }

  private rejectInvalid(message: string, callId: string | undefined, type: string | undefined): void {
    if (callId === undefined) {
      // ENV-5: nothing to answer; the connection cannot be trusted to stay in step.
      this.options.transport.close(closeCodes.UNDECODABLE_FRAME, truncate(message, 120));
      return;
    }
    const live = this.calls.get(callId);
    if (live && type === 'call.requested') {
      // ID-2 before ENV-6: a request reusing a live id, malformed or not, leaves that call alone.
      this.sendError(callId, RpcError.of('DUPLICATE_CALL_ID', `call id "${truncate(callId, 40)}" is already live on this connection`));
      return;
    }
    const error = RpcError.of('INVALID_FRAME', message);
    if (live) this.fail(live, error, true);
    else this.sendError(callId, error);
  }

  /** spec/PROTOCOL.md §4.1: REQ-1 … REQ-7, in order. */
  private admit(envelope: EnvelopeOf<'call.requested'>, frameBytes: number): void {
    const { id, payload } = envelope;
    if (this.calls.has(id)) {
      this.sendError(id, RpcError.of('DUPLICATE_CALL_ID', `call id "${truncate(id, 40)}" is already live on this connection`));
      return;
    }
    if (!this.accepting) return this.sendError(id, RpcError.of('UNAVAILABLE', 'the server is shutting down'));
    if (this.calls.size >= this.limits.maxCallsInFlight) {
      return this.sendError(id, RpcError.of('LIMIT_EXCEEDED', `at most ${this.limits.maxCallsInFlight} calls may be in flight on one connection`));
    }
    if (frameBytes > this.limits.maxInputBytes) {
      return this.sendError(id, RpcError.of('PAYLOAD_TOO_LARGE', `request of ${frameBytes} bytes exceeds maxInputBytes ${this.limits.maxInputBytes}`));
    }
    const op = this.options.registry.lookup(payload.operationId);
    if (!op || op.visibility === 'internal') {
      return this.sendError(id, RpcError.of('NOT_FOUND', `unknown operation: ${truncate(payload.operationId, 200)}`));
    }
    let identity = this.options.identity ?? null;
    if (payload.auth_token !== undefined) {
      const fromToken = this.options.authenticate?.(payload.auth_token);
      if (!fromToken) return this.sendError(id, RpcError.of('FORBIDDEN', 'invalid token'));
      identity = fromToken;
    }
    const denied = checkAccess(op.access, identity);
    if (denied) return this.sendError(id, denied);
    const shape = isUnary(op) ? 'unary' : 'stream';
    if (payload.expect !== undefined && payload.expect !== shape) {
      return this.sendError(id, RpcError.of('INVALID_OPERATION_TYPE', `${op.name} is a ${op.kind}: expect "${shape}", not "${payload.expect}"`));
    }
    const input = op.input.safeParse(payload.input ?? null);
    if (!input.success) return this.sendError(id, RpcError.of('INVALID_INPUT', describeZodError(input.error)));

    this.start(id, op, input.data, identity, payload.deadline_ms);
  }

  private start(id: string, op: Operation, input: unknown, identity: Identity | null, deadlineMs: number | undefined): void {
    const call = new LiveCall(id, op, this.limits.maxBufferedBytesPerCall);
    this.calls.set(id, call);
    this.counters.callsStarted++;
    let deadlineAt: number | undefined;
    if (deadlineMs !== undefined) {
      const budget = Math.min(deadlineMs, this.limits.maxDeadlineMs);
      deadlineAt = Date.now() + budget;
      call.deadlineTimer = setTimeout(() => {
        if (!call.ended) this.fail(call, RpcError.of('TIMEOUT', `deadline of ${budget} ms passed`), true); // DL-1
      }, budget);
    }
    const ctx: CallContext = {
      callId: id,
      operation: op.name,
      identity,
      signal: call.controller.signal,
      logger: bindLogger(this.logger, { callId: id, operation: op.name }),
      deadlineAt,
    };
    if (isUnary(op)) pumpUnary(call, op, input, ctx, this);
    else pumpStream(call, op, input, ctx, this);
  }

  // PumpSink -------------------------------------------------------------------

  respond(call: LiveCall, output: unknown, final: boolean): void {
    if (call.ended) return;
    let value = output;
    if (this.options.validateOutput !== false) {
      const checked = call.op.output.safeParse(output);
      if (!checked.success) {
        this.fail(call, new RpcError('INTERNAL', `handler output fails the output schema: ${describeZodError(checked.error, 'output')}`), true);
        return;
      }
      value = checked.data;
    }
    if (final) this.endCall(call, false);
    this.send(call, frames.responded(call.id, value), final);
  }

  complete(call: LiveCall): void {
    if (call.ended) return;
    this.endCall(call, false);
    this.send(call, frames.completed(call.id), true);
  }

  fail(call: LiveCall, error: unknown, byMachinery: boolean): void {
    if (call.ended) return;
    // Machinery errors (timeout, overflow, shutdown) are protocol codes and go out
    // as they are; handler errors pass through the declared-codes filter (ERR-4).
    const wire = byMachinery ? RpcError.from(error) : toWireError(call.op, error);
    if (!byMachinery) this.logUnexpected(call, error, wire);
    this.endCall(call, byMachinery);
    this.send(call, frames.error(call.id, wire.toPayload()), true);
  }

  // ---------------------------------------------------------------------------

  private endCall(call: LiveCall, cancel: boolean): void {
    call.end(cancel);
    this.calls.delete(call.id);
    if (this.calls.size === 0) {
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const wake of waiters) wake();
    }
  }

  private sendError(id: string, error: RpcError): void {
    this.write(undefined, id, frames.error(id, error.toPayload()), true);
  }

  private send(call: LiveCall, envelope: Envelope, final: boolean): void {
    this.write(call, call.id, envelope, final);
  }

  private write(call: LiveCall | undefined, id: string, envelope: Envelope, final: boolean): void {
    if (this.closed) return;
    const transport = this.options.transport;
    let bytes: Uint8Array;
    try {
      bytes = transport.codec.encode(envelope);
    } catch (error) {
      // e.g. a BigInt under the JSON codec: the call fails, the connection lives.
      const message = `output cannot be encoded with ${transport.codec.name}: ${error instanceof Error ? error.message : String(error)}`;
      if (envelope.type !== 'call.error') this.write(call, id, frames.error(id, new RpcError('INTERNAL', message).toPayload()), true);
      if (call && !call.ended) this.endCall(call, true);
      return;
    }
    const size = bytes.byteLength;
    if (size > this.limits.maxFrameBytes) {
      // LIM-1: the callee never sends what the peer must refuse; the call ends, the connection serves on.
      const error = new RpcError('INTERNAL', `an output frame of ${size} bytes exceeds maxFrameBytes ${this.limits.maxFrameBytes}`);
      if (call && !call.ended) this.fail(call, error, true);
      else this.write(undefined, id, frames.error(id, error.toPayload()), true); // a unary answer: its call ended already
      return;
    }
    if (call) call.pendingBytes += size;
    transport.send(id, bytes, final).then(
      () => call?.released(size),
      (error: unknown) => {
        call?.released(size);
        this.logger.debug('send failed; closing session', { error: String(error) });
        this.close();
      },
    );
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
