import { RpcError, type Envelope } from '../protocol/index.js';
import type { CallOptions } from './client.js';
import type { CallEvents, ClientCall } from './client-call.js';
import { InputPump } from './input-pump.js';
import type { PulledCall, StreamConsumer } from './pulled.js';

/** What a call that fails on our side does at the server: `abort` sends call.aborted; `forget` (the connection is gone, or it never started) sends nothing. */
export type ServerSide = 'abort' | 'forget';

/** What the client does with a call's frames and with its failure on this side. */
export interface StartHandlers {
  frame(e: Envelope, bytes: number): void;
  fail(error: RpcError, server: ServerSide): void;
}

/**
 * The ClientCall's events, handed on to the call's handlers. Classes here and in
 * StreamCall, not closures made for each call: V8 compiles a closure made for each call
 * again for each call, and drops the code that inlined one once its call is collected,
 * while a method is compiled once for every call (bench/PROFILE.md, "Against the code
 * before issue 32's rework").
 */
export class HandedOn implements CallEvents {
  constructor(private readonly handlers: StartHandlers) {}

  frame(envelope: Envelope, bytes: number): void {
    this.handlers.frame(envelope, bytes);
  }

  failed(error: RpcError): void {
    this.handlers.fail(error, 'forget');
  }
}

/**
 * One stream as its consumer sees it: values and the end reported to `consumer`, what it
 * took released to the call (its credit renewed, §4.8), `options.input` sent as the
 * server grants input credit (§4.7).
 */
export class StreamCall implements StartHandlers, PulledCall {
  private ended = false;
  private admitted = false;
  private call!: ClientCall;
  private cleanup!: () => void;
  private pump: InputPump | undefined;

  constructor(
    private readonly consumer: StreamConsumer,
    private readonly options: CallOptions,
  ) {}

  /** Begins the call: `begin` starts its ClientCall with this as its handlers. */
  open(begin: (handlers: StartHandlers) => { call: ClientCall; cleanup: () => void }): this {
    ({ call: this.call, cleanup: this.cleanup } = begin(this));
    const { call } = this;
    if (this.options.input) {
      this.pump = new InputPump(
        this.options.input,
        call.inputCredit,
        (item) => call.sendInput(item),
        () => call.sendEnd(),
        (error) => this.fail(error, 'abort'),
      );
    }
    return this;
  }

  frame(e: Envelope, bytes: number): void {
    if (this.ended) return;
    const { options } = this;
    if (e.type === 'call.resumable') return options.onResumable?.(e.payload.token, e.payload.grace_ms);
    if (e.type !== 'call.error') this.admit();
    // The first credit admits the call (CR-1); a resume's credit is counted by the call.
    if (e.type === 'call.resumed') {
      this.pump?.start();
      options.onResumed?.(e.payload.input_seq);
    } else if (e.type === 'call.credit') this.pump?.start();
    else if (e.type === 'call.responded') this.consumer.value(e.payload.output, bytes);
    else if (e.type === 'call.completed') {
      this.end();
      this.consumer.complete();
    } else if (e.type === 'call.error') {
      this.end();
      this.consumer.error(RpcError.fromPayload(e.payload));
    }
  }

  fail(error: RpcError, server: ServerSide): void {
    if (this.ended) return;
    if (server === 'abort') this.call.abort(); // before end(), which forgets the call
    this.end();
    this.consumer.error(error);
  }

  release(bytes: number): void {
    if (!this.ended) this.call.take(bytes);
  }

  cancel(): void {
    if (this.ended) return;
    this.call.abort();
    this.end();
  }

  private admit(): void {
    if (this.admitted) return;
    this.admitted = true;
    this.options.onAdmitted?.();
  }

  private end(): void {
    this.ended = true;
    this.pump?.stop();
    this.cleanup();
  }
}
