import { nextTurn } from '../flow/index.js';
import { envelopes, RpcError, type Carrier, type Codec, type Envelope, type EnvelopeOf } from '../protocol/index.js';
import type { CallChannel, CallSink, ClientConnection } from './connection.js';

/** What a reconnecting connection tells its client (spec/PROTOCOL.md §4.9). */
export type ConnectionEvent =
  /** The connection was lost; `calls` resumable calls wait to be taken up again. */
  | { readonly type: 'reconnecting'; readonly calls: number; readonly reason: string }
  /** The server took call `id` up again on a new connection (its `call.resumed`): it goes on. */
  | { readonly type: 'resumed'; readonly id: string };

export interface ResumingOptions {
  /** Makes a new connection to the same server, with the same codec. */
  readonly dial: () => Promise<ClientConnection>;
  /** The first wait before dialling again; doubled on each failure up to `maxDelayMs`, with jitter. */
  readonly initialDelayMs?: number;
  readonly maxDelayMs?: number;
}

interface SentInput {
  readonly seq: number;
  readonly envelope: Envelope;
  readonly bytes: number;
}

/** One call as this connection follows it, across the connections it rides. */
interface Tracked {
  readonly id: string;
  readonly request: Envelope;
  readonly sink: CallSink;
  /** The output window the call asked for; a resume asks for it afresh. */
  readonly window: number;
  channel: CallChannel | undefined;
  token: string | undefined;
  graceMs: number;
  /** When the connection it was on was lost; its grace counts from then. */
  lostAt: number | undefined;
  /** The last output sequence number received (§4.9). */
  lastSeq: number;
  /** The last one the callee has been told of; an acknowledgement of the rest is on its way while `ackScheduled`. */
  ackedSeq: number;
  ackScheduled: boolean;
  inputSeq: number;
  /** Input the callee has not yet acknowledged, sent again after a resume. */
  readonly unacked: SentInput[];
  /** Input credit as this side counts it: grants received less input sent. */
  inputCredit: number;
  /** A `call.resume` is out and its `call.resumed` has not come back. */
  resuming: boolean;
  /** The caller aborted it while no connection was up: abort it once one is. */
  abortPending: boolean;
  /** Taken up by token (`takeUp`), not started here: until its first `call.resumed`, a refusal is the callee's own answer. */
  takenUp: boolean;
}

/**
 * A client connection that survives losing its carrier (spec/PROTOCOL.md §4.9): when
 * the connection breaks, it dials again with backoff and jitter and takes every
 * resumable call up where its output stopped, sending again the input the callee had
 * not acknowledged, so the consumer sees no gap and no duplicate. Calls that are not
 * resumable fail with the connection, as on a plain connection.
 */
export class ResumingConnection implements ClientConnection {
  private current: ClientConnection | undefined;
  private readonly calls = new Map<string, Tracked>();
  /** Calls started while no connection was up: started once one is. */
  private waiting: Tracked[] = [];
  private reconnecting = false;
  private closing = false;
  /** Ends the wait before the next dial at once (the client closed). */
  private backoff: (() => void) | undefined;
  /** Hears `reconnecting` and `resumed` (the client that rides this connection). */
  onEvent: ((event: ConnectionEvent) => void) | undefined;
  private closedResolve: () => void = () => undefined;
  readonly closed = new Promise<void>((resolve) => (this.closedResolve = resolve));

  constructor(
    first: ClientConnection,
    private readonly options: ResumingOptions,
  ) {
    this.adopt(first);
  }

  get codec(): Codec {
    return this.current?.codec ?? this.lastCodec;
  }

  get carrier(): Carrier {
    return this.current?.carrier ?? this.lastCarrier;
  }

  private lastCodec!: Codec;
  private lastCarrier!: Carrier;

  startCall(request: Envelope, sink: CallSink): CallChannel {
    const payload = request.type === 'call.requested' ? request.payload : undefined;
    const call = this.track(request, sink, payload?.credit ?? 0);
    if (this.current) call.channel = this.current.startCall(request, this.sinkFor(call));
    else {
      this.waiting.push(call);
      this.reconnect('no connection is up');
    }
    return this.channelOf(call);
  }

  /**
   * Takes up a resumable call this connection did not start (§4.9): one another connection,
   * another process even, started and lost, named by its token and the last output seq its
   * consumer has. `resume` is its `call.resume`; the call then goes on as if started here:
   * resumed again on a lost connection, for `graceMs`. A refusal reaches `sink` as the callee's
   * `call.error`, as a new call's would.
   */
  takeUp(resume: Envelope, graceMs: number, sink: CallSink): CallChannel {
    if (resume.type !== 'call.resume') throw new TypeError('takeUp takes a call.resume');
    const call = this.track(resume, sink, resume.payload.credit);
    call.token = resume.payload.token;
    call.graceMs = graceMs;
    call.lastSeq = call.ackedSeq = resume.payload.seq;
    call.takenUp = true;
    if (this.current) this.resume(this.current, call);
    else {
      call.lostAt = Date.now();
      this.reconnect('no connection is up');
    }
    return this.channelOf(call);
  }

  private track(request: Envelope, sink: CallSink, window: number): Tracked {
    const call: Tracked = {
      id: request.id,
      request,
      sink,
      window,
      channel: undefined,
      token: undefined,
      graceMs: 0,
      lostAt: undefined,
      lastSeq: 0,
      ackedSeq: 0,
      ackScheduled: false,
      inputSeq: 0,
      unacked: [],
      inputCredit: 0,
      resuming: false,
      abortPending: false,
      takenUp: false,
    };
    this.calls.set(call.id, call);
    sink.ackLimit?.onRaise(() => this.acknowledgeSoon(call));
    return call;
  }

  private channelOf(call: Tracked): CallChannel {
    return {
      abort: () => this.abort(call),
      done: () => {
        // An abort that could not be sent is sent on the next connection: the callee ends the call then, not after its grace.
        if (!call.abortPending) this.calls.delete(call.id);
        call.channel?.done();
      },
      send: (envelope) => this.send(call, envelope),
    };
  }

  async close(): Promise<void> {
    this.closing = true;
    this.backoff?.();
    const current = this.current;
    if (current) await current.close();
    // Calls waiting for a connection, to start or to be taken up again, end with the client.
    this.failAll(new RpcError('CANCELLED', 'the client closed its connection'));
    this.closedResolve();
  }

  /**
   * The server is gone for good (a fleet host that stopped answering): every call
   * fails with `error` now rather than after its grace, and nothing is dialled again.
   */
  abandon(error: RpcError): void {
    this.closing = true;
    this.backoff?.();
    this.failAll(error);
    const current = this.current;
    for (const call of [...this.calls.values()]) this.fail(call, error);
    void current?.close();
    this.closedResolve();
  }

  private adopt(connection: ClientConnection): void {
    this.current = connection;
    this.lastCodec = connection.codec;
    this.lastCarrier = connection.carrier;
    void connection.closed.then(() => {
      if (this.current !== connection) return;
      this.current = undefined;
      if (this.closing) return this.closedResolve();
      // Calls on it have heard `lost`; with none to resume, dial again only for the next call.
      if (this.detached().length > 0 || this.waiting.length > 0) this.reconnect('the connection was lost');
    });
  }

  private sinkFor(call: Tracked): CallSink {
    return {
      frame: (envelope, bytes) => this.frame(call, envelope, bytes),
      lost: (error) => {
        if (this.closing || call.token === undefined || call.abortPending) return this.fail(call, error);
        call.channel = undefined;
        call.resuming = false;
        call.lostAt ??= Date.now();
        this.reconnect(error.message);
      },
    };
  }

  private frame(call: Tracked, envelope: Envelope, bytes: number): void {
    switch (envelope.type) {
      case 'call.resumable':
        call.token = envelope.payload.token;
        call.graceMs = envelope.payload.grace_ms;
        return call.sink.frame(envelope, bytes);
      case 'call.resumed':
        return this.resumed(call, envelope, bytes);
      case 'call.responded': {
        const seq = envelope.payload.seq;
        if (seq !== undefined) {
          if (seq <= call.lastSeq) return; // sent again after a resume: the consumer has it
          call.lastSeq = seq;
          this.acknowledgeSoon(call);
          return call.sink.frame(envelope, bytes);
        }
        break;
      }
      case 'call.credit': {
        const seq = envelope.payload.seq;
        if (seq !== undefined) this.acknowledged(call, seq);
        call.inputCredit += envelope.payload.bytes;
        return call.sink.frame(envelope, bytes);
      }
      case 'call.error':
        if (call.resuming && call.takenUp) {
          // A call taken up by token that the callee refuses: its answer, as a new call's would be.
          this.calls.delete(call.id);
          return call.sink.frame(envelope, bytes);
        }
        if (call.resuming) {
          // The callee no longer has the call (its grace passed, or it restarted): the call is lost with its connection.
          this.calls.delete(call.id);
          return call.sink.lost(new RpcError('UNAVAILABLE', `the connection was lost and the call could not be resumed: ${envelope.payload.message}`));
        }
        break;
      default:
        break;
    }
    if (isTerminal(envelope) && call.token !== undefined) {
      // §4.9: the caller has everything; the callee may forget the call now rather than after its grace,
      // or, for a relayed call, once the relay's own caller has everything.
      const limit = call.sink.ackLimit;
      if (limit) limit.onRelease(() => this.forgetAtCallee(call.id));
      else call.channel?.send(envelopes.aborted(call.id));
      call.token = undefined;
    }
    call.sink.frame(envelope, bytes);
  }

  private send(call: Tracked, envelope: Envelope): number {
    if (call.token === undefined) return call.channel?.send(envelope) ?? 0;
    if (envelope.type === 'call.input' || envelope.type === 'call.end') {
      const seq = ++call.inputSeq;
      const numbered: Envelope = envelope.type === 'call.input' ? { ...envelope, payload: { ...envelope.payload, seq } } : { ...envelope, payload: { seq } };
      const bytes = call.channel && !call.resuming ? call.channel.send(numbered) : this.codec.encode(numbered).byteLength;
      call.unacked.push({ seq, envelope: numbered, bytes });
      call.inputCredit -= bytes;
      return bytes;
    }
    if (envelope.type === 'call.credit') {
      // A resume asks for a whole window afresh: a grant for a connection that is gone means nothing.
      if (!call.channel || call.resuming) return 0;
      call.ackedSeq = this.ackable(call);
      return call.channel.send({ ...envelope, payload: { bytes: envelope.payload.bytes, seq: call.ackedSeq } });
    }
    return call.channel?.send(envelope) ?? 0;
  }

  /**
   * §4.9: the callee keeps every item until told it arrived, within bounds that may be smaller
   * than what a consumer takes before it grants again (§4.8): received items are acknowledged
   * as they arrive, once per burst, or a full replay would wait for a grant that cannot come.
   * A burst is what one turn of the event loop received: the acknowledgement leaves at its end,
   * after the items were handed on. A timer would send it a millisecond later, in the middle
   * of whatever comes next (an interactive session's next keystroke, which then waits behind
   * it at the callee).
   */
  private acknowledgeSoon(call: Tracked): void {
    if (call.ackScheduled) return;
    call.ackScheduled = true;
    nextTurn(() => {
      call.ackScheduled = false;
      const seq = this.ackable(call);
      if (!call.channel || call.resuming || call.token === undefined || seq <= call.ackedSeq) return;
      call.ackedSeq = seq;
      call.channel.send({ type: 'call.credit', id: call.id, payload: { bytes: 0, seq } });
    });
  }

  /** Tells the callee it may forget an ended call (its `call.aborted`), on the connection up now, after the call's own channel is done. */
  private forgetAtCallee(id: string): void {
    const current = this.current;
    if (!current || this.closing) return;
    current.startCall(envelopes.aborted(id), { frame: () => undefined, lost: () => undefined }).done();
  }

  /** What may be acknowledged: everything received, unless the call relays it to a caller of its own that has not. */
  private ackable(call: Tracked): number {
    const limit = call.sink.ackLimit;
    return limit ? Math.min(call.lastSeq, limit.upTo) : call.lastSeq;
  }

  private abort(call: Tracked): void {
    if (call.channel) {
      call.channel.abort();
      this.calls.delete(call.id);
      return;
    }
    // No connection: the call is aborted once one is up (or its grace ends it at the callee);
    // one that never started is simply dropped.
    this.waiting = this.waiting.filter((c) => c !== call);
    if (call.token === undefined) this.calls.delete(call.id);
    else call.abortPending = true;
  }

  private acknowledged(call: Tracked, seq: number): void {
    let n = 0;
    while (n < call.unacked.length && call.unacked[n]!.seq <= seq) n++;
    if (n > 0) call.unacked.splice(0, n);
  }

  /** §4.9: the callee has input up to `inputSeq` and counts `inputCredit`; the rest goes again, and the credit follows. */
  private resumed(call: Tracked, envelope: EnvelopeOf<'call.resumed'>, bytes: number): void {
    const { input_seq: inputSeq, input_credit: inputCredit } = envelope.payload;
    call.resuming = false;
    call.takenUp = false;
    call.lostAt = undefined;
    // A call taken up by token sent nothing here yet: its next input follows what the callee has.
    call.inputSeq = Math.max(call.inputSeq, inputSeq);
    this.acknowledged(call, inputSeq);
    call.sink.frame(envelope, bytes);
    let credit = inputCredit;
    for (const input of call.unacked) credit -= call.channel!.send(input.envelope);
    const change = credit - call.inputCredit;
    call.inputCredit = credit;
    // The input pump counts credit by grants: one (possibly negative) grant brings it to the callee's count.
    if (change !== 0) call.sink.frame(envelopes.credit(call.id, change), 0);
    this.onEvent?.({ type: 'resumed', id: call.id });
  }

  private detached(): Tracked[] {
    return [...this.calls.values()].filter((call) => call.channel === undefined && call.token !== undefined);
  }

  private reconnect(reason: string): void {
    if (this.reconnecting || this.closing) return;
    this.reconnecting = true;
    this.onEvent?.({ type: 'reconnecting', calls: this.detached().length, reason });
    void this.dialLoop().finally(() => (this.reconnecting = false));
  }

  private async dialLoop(): Promise<void> {
    const initial = this.options.initialDelayMs ?? 100;
    const max = this.options.maxDelayMs ?? 1000;
    for (let attempt = 0; !this.closing; attempt++) {
      this.expireGraces();
      if (this.detached().length === 0 && this.waiting.length === 0) return;
      // Full jitter over half the step: many clients cut at once do not all come back at once.
      const step = Math.min(max, initial * 2 ** attempt);
      await this.pause(step / 2 + Math.random() * (step / 2));
      if (this.closing) return;
      let connection: ClientConnection;
      try {
        connection = await this.options.dial();
      } catch (error) {
        // Refused, or the caller gave up (a signal): dialling again cannot help.
        if (error instanceof RpcError && (error.code === 'FORBIDDEN' || error.code === 'CANCELLED')) return this.failAll(error);
        continue;
      }
      if (this.closing) return void connection.close();
      this.adopt(connection);
      for (const call of this.detached()) this.resume(connection, call);
      const waiting = this.waiting;
      this.waiting = [];
      for (const call of waiting) call.channel = connection.startCall(call.request, this.sinkFor(call));
      return;
    }
  }

  private resume(connection: ClientConnection, call: Tracked): void {
    call.resuming = true;
    const request = call.request.type === 'call.requested' || call.request.type === 'call.resume' ? call.request.payload : undefined;
    const resume = envelopes.resume(call.id, {
      token: call.token!,
      seq: call.lastSeq,
      credit: call.window,
      ...(request?.auth_token === undefined ? {} : { auth_token: request.auth_token }),
    });
    call.channel = connection.startCall(resume, this.sinkFor(call));
    if (call.abortPending) {
      call.channel.abort();
      this.calls.delete(call.id);
    }
  }

  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.backoff = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  /** Calls whose grace has passed are gone at the callee: they fail here, never end as if complete. */
  private expireGraces(): void {
    const now = Date.now();
    for (const call of this.detached()) {
      if (call.lostAt !== undefined && now - call.lostAt > call.graceMs) {
        this.fail(call, new RpcError('UNAVAILABLE', `the connection was lost and the call could not be resumed within its ${Math.round(call.graceMs / 1000)} s grace`));
      }
    }
  }

  private fail(call: Tracked, error: RpcError): void {
    this.calls.delete(call.id);
    call.sink.lost(error);
  }

  private failAll(error: RpcError): void {
    for (const call of this.detached()) this.fail(call, error);
    this.failWaiting(error);
  }

  private failWaiting(error: RpcError): void {
    const waiting = this.waiting;
    this.waiting = [];
    for (const call of waiting) this.fail(call, error);
  }
}

/** A resumable call is a stream: it ends with one of these (§4.3, §4.5). */
function isTerminal(envelope: Envelope): boolean {
  return envelope.type === 'call.completed' || envelope.type === 'call.error';
}
