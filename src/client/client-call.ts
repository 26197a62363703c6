import { nextTurn, ReceiveWindow, SendCredit } from '../flow/index.js';
import { envelopes, RpcError, type Envelope, type EnvelopeOf } from '../protocol/index.js';
import { acknowledgeOnArrival, type AcknowledgementPolicy } from './acknowledgements.js';
import type { CallChannel, CallSink, ClientConnection } from './connection.js';

/** What the client hears of one call. */
export interface CallEvents {
  /** One frame of the call, once: an item sent again after a resume is not repeated. */
  frame(envelope: Envelope, bytes: number): void;
  /** The call failed on this side (its connection is gone for good, or the callee broke the credit rule): nothing more comes. */
  failed(error: RpcError): void;
}

/** What keeps a call across the connections it rides (spec/PROTOCOL.md §4.9). */
export interface CallKeeper {
  /** The call's connection was lost and the callee keeps the call: attach it to the next one, or fail it. */
  detached(call: ClientCall, error: RpcError): void;
  /** The callee took the call up again on a new connection. */
  resumed(call: ClientCall): void;
  /** The call needs no keeping any more. */
  release(call: ClientCall): void;
  /** Tells the callee, on the connection up now, that it may forget call `id`. */
  forget(id: string): void;
}

export interface ClientCallOptions {
  /** A stream's output window (§4.8): what the callee may send ahead of the consumer. None for a unary call. */
  readonly windowBytes?: number;
  readonly acknowledgements?: AcknowledgementPolicy | undefined;
  /** Hears each input sequence number the callee says it has. */
  readonly onInputAcknowledged?: ((seq: number) => void) | undefined;
  /** A call taken up by its token (its request a `call.resume`): how long the callee keeps it if it is lost again. */
  readonly graceMs?: number;
}

interface SentInput {
  readonly seq: number;
  readonly envelope: Envelope;
  /** Its encoded size, as the callee charges it. */
  readonly bytes: number;
}

/**
 * CR-7: a callee sends while its credit is positive, so it may overshoot by one frame; this
 * much more covers a peer that sizes frames a little differently. A frame past that is a
 * peer ignoring credit: the call ends, rather than the consumer's queue growing unbounded.
 */
const SLACK_BYTES = 64 * 1024;

/**
 * One call as the client follows it, across every connection it rides: the one owner of
 * its output window and input credit (§4.7, §4.8), and, once the callee made it resumable
 * (§4.9), of its sequence numbers, its acknowledgements and the input the callee has not
 * acknowledged. A connection only carries it: `attach` starts the call on one, or resumes
 * it there after the last item that arrived.
 */
export class ClientCall implements CallSink {
  readonly id: string;
  private credit: SendCredit | undefined;
  private readonly output: ReceiveWindow | undefined;
  private readonly acknowledgements: AcknowledgementPolicy;
  private keeper: CallKeeper | undefined;
  private connection: ClientConnection | undefined;
  private channel: CallChannel | undefined;
  /** Set while the callee keeps the call to resume it. */
  private token: string | undefined;
  private graceMs: number;
  /** When the connection it was on was lost; its grace counts from then. */
  private lostAt: number | undefined;
  /** A `call.resume` is out and its `call.resumed` has not come back. */
  private resuming = false;
  /** Taken up by its token, not started here: until its first `call.resumed`, a refusal is the callee's own answer. */
  private takenUp: boolean;
  /** The caller aborted it while no connection carried it: it is aborted once one does. */
  private abortPending = false;
  /** The last output sequence number received, and the last the callee was told of. */
  private lastSeq = 0;
  private ackedSeq = 0;
  private ackScheduled = false;
  private inputSeq = 0;
  private readonly unacked: SentInput[] = [];
  /**
   * The tail of `unacked` not yet on the current connection, in order: what a resume sends
   * again waits here for the callee's credit (CR-2), and new input waits behind it. Its bytes
   * are charged to the credit already, so the source is not read further while it waits.
   */
  private readonly unsent: SentInput[] = [];
  private unsentBytes = 0;
  private readonly onInputAcknowledged: ((seq: number) => void) | undefined;

  constructor(
    private readonly request: Envelope,
    private readonly events: CallEvents,
    options: ClientCallOptions = {},
  ) {
    this.onInputAcknowledged = options.onInputAcknowledged;
    this.id = request.id;
    const window = options.windowBytes;
    // CR-4: granted again in steps of half a window, as the consumer takes values.
    this.output = window === undefined ? undefined : new ReceiveWindow(window, window / 2, (bytes) => this.grant(bytes));
    this.acknowledgements = options.acknowledgements ?? acknowledgeOnArrival;
    this.acknowledgements.watch?.(() => this.acknowledgeSoon());
    this.graceMs = options.graceMs ?? 0;
    this.takenUp = request.type === 'call.resume';
    if (request.type === 'call.resume') {
      this.token = request.payload.token;
      this.lastSeq = this.ackedSeq = request.payload.seq;
      this.lostAt = Date.now();
    }
  }

  /** Input credit (§4.7): what the callee granted less the input sent, as the callee counts it. Made on first use: most calls send no input. */
  get inputCredit(): SendCredit {
    return (this.credit ??= new SendCredit());
  }

  /** No connection carries it, and the callee keeps it for its grace. */
  get detached(): boolean {
    return this.channel === undefined && this.token !== undefined;
  }

  /** A connection carries it (or carried it until its end). */
  get attached(): boolean {
    return this.channel !== undefined;
  }

  /** From now on a lost connection detaches the call, to be attached again by `keeper`, rather than failing it. */
  keptBy(keeper: CallKeeper): void {
    this.keeper = keeper;
  }

  /** Carries the call on `connection`: its request the first time, then a `call.resume` after the last item that arrived. */
  attach(connection: ClientConnection): void {
    this.connection = connection;
    this.resuming = this.token !== undefined;
    const request = this.resuming ? this.resumeRequest() : this.request;
    this.channel = connection.startCall(request, this);
    if (this.abortPending) this.abort();
  }

  /** The consumer took `bytes` of output: the callee may send as much again. */
  take(bytes: number): void {
    this.output?.take(bytes);
  }

  /** One item of the call's input stream (§4.7), charged to the input credit; kept, when resumable, until the callee acknowledges it. */
  sendInput(item: unknown): void {
    if (this.token === undefined) return this.inputCredit.charge(this.channel?.send(envelopes.input(this.id, item)) ?? 0);
    this.sendNumbered((seq) => ({ type: 'call.input', id: this.id, payload: { item, seq } }));
  }

  /** The end of the call's input stream. */
  sendEnd(): void {
    if (this.token === undefined) return void this.channel?.send(envelopes.end(this.id));
    this.sendNumbered((seq) => ({ type: 'call.end', id: this.id, payload: { seq } }));
  }

  /** The caller gave the call up: the callee hears `call.aborted` now, or once a connection carries the call again. */
  abort(): void {
    if (this.channel) {
      this.channel.abort();
      this.keeper?.release(this);
    } else if (this.token === undefined) this.keeper?.release(this); // never started: there is nothing to tell
    else this.abortPending = true;
  }

  /** The call is over at the client: release what it holds. An abort not yet sent keeps it until it is. */
  done(): void {
    if (!this.abortPending) this.keeper?.release(this);
    this.channel?.done();
  }

  /** The call fails here, and nothing more is kept of it. */
  fail(error: RpcError): void {
    this.keeper?.release(this);
    this.events.failed(error);
  }

  /** Fails the call if its grace passed while no connection carried it: the callee has forgotten it by now. */
  expireIfPast(now: number): void {
    if (!this.detached || this.lostAt === undefined || now - this.lostAt <= this.graceMs) return;
    this.fail(new RpcError('UNAVAILABLE', `the connection was lost and the call could not be resumed within its ${Math.round(this.graceMs / 1000)} s grace`));
  }

  /** One frame of the call from the connection carrying it (CallSink). */
  frame(envelope: Envelope, bytes: number): void {
    switch (envelope.type) {
      case 'call.resumable':
        this.token = envelope.payload.token;
        this.graceMs = envelope.payload.grace_ms;
        break;
      case 'call.resumed':
        return this.resumed(envelope, bytes);
      case 'call.responded':
        if (!this.arrived(envelope.payload.seq, bytes)) return;
        break;
      case 'call.credit':
        if (envelope.payload.seq !== undefined) this.acknowledged(envelope.payload.seq);
        this.inputCredit.grant(envelope.payload.bytes);
        this.sendUnsent();
        break;
      case 'call.error':
        if (this.resuming) return this.resumeRefused(envelope, bytes);
        break;
      default:
        break;
    }
    if ((envelope.type === 'call.completed' || envelope.type === 'call.error') && this.token !== undefined) this.ended();
    this.events.frame(envelope, bytes);
  }

  /** An output item arrived: false for one sent again after a resume (the consumer has it), or one past the credit. */
  private arrived(seq: number | undefined, bytes: number): boolean {
    if (seq !== undefined) {
      if (seq <= this.lastSeq) return false;
      this.lastSeq = seq;
      this.acknowledgeSoon();
    }
    if (!this.output) return true;
    if (this.output.credit <= -SLACK_BYTES) {
      this.abort();
      this.fail(RpcError.of('CREDIT_EXCEEDED', `the server sent more output than the ${this.output.window}-byte window it was granted (spec §4.8, CR-7)`));
      return false;
    }
    this.output.arrived(bytes);
    return true;
  }

  /**
   * The callee has input up to `input_seq` and counts `input_credit`: the rest goes again as
   * that credit allows (CR-2), the remainder as the callee grants more. What it has is kept
   * until a credit acknowledges it: a callee that relays the call (a fleet gateway) may have
   * it and die before it passed it on (§4.9), and then more may wait than the next one grants.
   */
  private resumed(envelope: EnvelopeOf<'call.resumed'>, bytes: number): void {
    const { input_seq: inputSeq, input_credit: inputCredit } = envelope.payload;
    this.resuming = false;
    this.takenUp = false;
    this.lostAt = undefined;
    // A call taken up by token sent nothing here yet: its next input follows what the callee has.
    this.inputSeq = Math.max(this.inputSeq, inputSeq);
    this.output?.renew();
    this.unsent.length = 0;
    this.unsentBytes = 0;
    for (const input of this.unacked) if (input.seq > inputSeq) this.queue(input);
    this.inputCredit.reset(inputCredit - this.unsentBytes);
    this.sendUnsent();
    this.events.frame(envelope, bytes);
    this.keeper?.resumed(this);
  }

  private resumeRefused(envelope: EnvelopeOf<'call.error'>, bytes: number): void {
    this.keeper?.release(this);
    // Taken up by token: the callee's refusal is its answer, as a new call's would be.
    if (this.takenUp) return this.events.frame(envelope, bytes);
    // The callee no longer has the call (its grace passed, or it restarted): the call is lost with its connection.
    this.events.failed(new RpcError('UNAVAILABLE', `the connection was lost and the call could not be resumed: ${envelope.payload.message}`));
  }

  /** The caller has the whole stream: the callee may forget it now rather than after its grace, once the policy says so. */
  private ended(): void {
    this.token = undefined;
    let atOnce = true;
    this.acknowledgements.ended(() => {
      // Said at once, it goes on the call's own channel; said later, that channel is done, and the connection up then carries it.
      if (atOnce) this.channel?.send(envelopes.aborted(this.id));
      else (this.keeper ?? this.connection)?.forget(this.id);
    });
    atOnce = false;
  }

  /** The connection carrying the call is gone (CallSink). */
  lost(error: RpcError, final = false): void {
    if (final || this.token === undefined || this.abortPending || !this.keeper) return this.fail(error);
    this.channel = undefined;
    this.resuming = false;
    this.lostAt ??= Date.now();
    this.keeper.detached(this, error);
  }

  private resumeRequest(): Envelope {
    const request = this.request.type === 'call.requested' || this.request.type === 'call.resume' ? this.request.payload : undefined;
    return envelopes.resume(this.id, {
      token: this.token!,
      seq: this.lastSeq,
      credit: this.output?.window ?? 0,
      ...(request?.auth_token === undefined ? {} : { auth_token: request.auth_token }),
    });
  }

  private sendNumbered(make: (seq: number) => Envelope): void {
    const seq = ++this.inputSeq;
    const envelope = make(seq);
    // It waits behind input sent again, while no connection carries the call, and past the credit: a read
    // the pump began with credit may end after a resume spent it. Waiting, it is charged as the callee will charge it.
    const now = this.sendable && this.unsent.length === 0 && this.mayGo(envelope);
    const input = { seq, envelope, bytes: now ? this.channel!.send(envelope) : (this.connection?.codec.encode(envelope).byteLength ?? 0) };
    this.unacked.push(input);
    if (!now) this.queue(input);
    this.inputCredit.charge(input.bytes);
  }

  /** CR-2 as the callee counts the credit (what waits is charged already): input while it is positive; `call.end` takes none. */
  private mayGo(envelope: Envelope): boolean {
    return envelope.type !== 'call.input' || this.inputCredit.available + this.unsentBytes > 0;
  }

  private get sendable(): boolean {
    return this.channel !== undefined && !this.resuming;
  }

  private queue(input: SentInput): void {
    this.unsent.push(input);
    this.unsentBytes += input.bytes;
  }

  /** Sends what waits, in order, while it may go. */
  private sendUnsent(): void {
    while (this.sendable && this.unsent.length > 0) {
      const input = this.unsent[0]!;
      if (!this.mayGo(input.envelope)) return;
      this.unsent.shift();
      this.unsentBytes -= input.bytes;
      // Charged when it was queued; the connection's count of its size is the one the callee makes.
      this.inputCredit.charge(this.channel!.send(input.envelope) - input.bytes);
    }
  }

  /** The callee has the input up to `seq`: it is not sent again. */
  private acknowledged(seq: number): void {
    let n = 0;
    while (n < this.unacked.length && this.unacked[n]!.seq <= seq) n++;
    if (n > 0) this.unacked.splice(0, n);
    this.onInputAcknowledged?.(seq);
  }

  /** A grant of output credit; on a resumable call it acknowledges what arrived too. */
  private grant(bytes: number): void {
    if (this.token === undefined) return void this.channel?.send(envelopes.credit(this.id, bytes));
    // A resume asks for a whole window afresh: a grant for a connection that is gone means nothing.
    if (!this.channel || this.resuming) return;
    this.ackedSeq = this.acknowledgements.limit(this.lastSeq);
    this.channel.send({ type: 'call.credit', id: this.id, payload: { bytes, seq: this.ackedSeq } });
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
  private acknowledgeSoon(): void {
    if (this.ackScheduled) return;
    this.ackScheduled = true;
    nextTurn(() => {
      this.ackScheduled = false;
      const seq = this.acknowledgements.limit(this.lastSeq);
      if (!this.channel || this.resuming || this.token === undefined || seq <= this.ackedSeq) return;
      this.ackedSeq = seq;
      this.channel.send({ type: 'call.credit', id: this.id, payload: { bytes: 0, seq } });
    });
  }
}
