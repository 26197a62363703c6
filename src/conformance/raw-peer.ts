import { envelopes, parseEnvelope, type Carrier, type Codec, type Envelope } from '../protocol/index.js';
import type { EventQueue, RawEvent } from './events.js';

/** How a raw peer's bytes travel: a WebSocket, WebTransport streams (raw-connection.ts), or memory (src/testing). */
export interface RawWire {
  readonly transport: 'websocket' | 'webtransport' | 'memory';
  /** What the connection rides; `memory`: no socket at all. */
  readonly carrier: Carrier;
  /** Whether `reset` really resets a stream (not through Deno: docs/http3.md "Upstream defects"). */
  readonly resets: boolean;
  /** WebSocket: the subprotocol the server chose, '' for none. */
  readonly protocol?: string;
  readonly codec: Codec;
  /** Where the wire records what arrives. */
  readonly events: EventQueue;
  sendValue(value: unknown, streamOf?: string): void;
  sendBytes(bytes: Uint8Array, id?: string): void;
  sendText(text: string): void;
  pause(ms?: number): void;
  resume(): void;
  finish(id: string): void;
  reset(id: string): void;
  close(): Promise<void>;
  /** Drops the connection with no close handshake, as a network does; undefined where this wire cannot. */
  readonly drop?: () => Promise<void>;
}

export interface CloseInfo {
  readonly code: number;
  readonly reason: string;
}

/**
 * The one raw peer: it sends exactly the bytes it is asked to and records everything
 * that comes back, valid or not, in arrival order. No SDK involved. The conformance
 * runner reads its `events`; tests also use the frame-level helpers (`request`,
 * `next`, `framesFor`), which see only the frames that are valid envelopes.
 */
export class RawPeer {
  private readonly parsed = new WeakMap<RawEvent, Envelope | null>();

  constructor(private readonly wire: RawWire) {}

  get transport(): RawWire['transport'] {
    return this.wire.transport;
  }
  get carrier(): RawWire['carrier'] {
    return this.wire.carrier;
  }
  get resets(): boolean {
    return this.wire.resets;
  }
  /** WebSocket: the subprotocol the server chose, '' for none; undefined elsewhere. */
  get protocol(): string | undefined {
    return this.wire.protocol;
  }
  get codec(): Codec {
    return this.wire.codec;
  }
  get events(): EventQueue {
    return this.wire.events;
  }

  /**
   * Encodes `value` with the codec and sends it as one frame. On WebTransport it goes
   * on the stream of its id (a request opens a new one), or on `streamOf`'s stream.
   */
  sendValue(value: unknown, streamOf?: string): void {
    this.wire.sendValue(value, streamOf);
  }
  /** Raw bytes: one WebSocket message, raw stream bytes (prefix included) on WebTransport, one frame in memory. */
  sendBytes(bytes: Uint8Array, id?: string): void {
    this.wire.sendBytes(bytes, id);
  }
  /** WebSocket only: a text message. */
  sendText(text: string): void {
    this.wire.sendText(text);
  }
  /** Stops reading, so the server sees a slow peer: for `ms`, or until `resume`. */
  pause(ms?: number): void {
    this.wire.pause(ms);
  }
  resume(): void {
    this.wire.resume();
  }
  /** WebTransport: ends our sending side of the stream of `id` (FIN). */
  finish(id: string): void {
    this.wire.finish(id);
  }
  /** WebTransport: resets our sending side of the stream of `id`. */
  reset(id: string): void {
    this.wire.reset(id);
  }
  close(): Promise<void> {
    return this.wire.close();
  }
  /** Whether `drop` can lose the connection the way a network does. */
  get drops(): boolean {
    return this.wire.drop !== undefined;
  }
  drop(): Promise<void> {
    if (!this.wire.drop) throw new Error(`a ${this.wire.carrier} peer cannot drop its connection without a close`);
    return this.wire.drop();
  }

  // Frame-level helpers -------------------------------------------------------------

  request(id: string, operationId: string, input?: unknown, extra: Record<string, unknown> = {}): void {
    this.sendValue(envelopes.requested(id, { operationId, ...(input === undefined ? {} : { input }), ...extra }));
  }

  abort(id: string): void {
    this.sendValue(envelopes.aborted(id));
  }

  /** Every valid frame received, consumed or not, in order. */
  get received(): Envelope[] {
    return this.events.all().flatMap((e) => this.envelopeOf(e) ?? []);
  }

  /** Valid frames received for one call id, in order. */
  framesFor(id: string): Envelope[] {
    return this.received.filter((e) => e.id === id);
  }

  /** The next valid frame, not yet taken, that matches; waits up to `timeoutMs`. */
  async next(match: (e: Envelope) => boolean = () => true, timeoutMs = 5000): Promise<Envelope> {
    const event = await this.events.take((e) => {
      const envelope = this.envelopeOf(e);
      return envelope !== undefined && match(envelope);
    }, timeoutMs);
    if (!event) {
      const frames = this.events.all().filter((e) => e.kind === 'frame').length;
      throw new Error(`no matching frame within ${timeoutMs} ms; received ${frames} frames, ${frames - this.received.length} of them not valid envelopes`);
    }
    return this.envelopeOf(event)!;
  }

  /** The next frame of a call. */
  nextFor(id: string, timeoutMs?: number): Promise<Envelope> {
    return this.next((e) => e.id === id, timeoutMs);
  }

  get isClosed(): boolean {
    return this.events.all().some((e) => e.kind === 'close');
  }

  async waitForClose(timeoutMs = 5000): Promise<CloseInfo> {
    const event = await this.events.seen((e) => e.kind === 'close', timeoutMs);
    if (event?.kind !== 'close') throw new Error(`connection still open after ${timeoutMs} ms`);
    return { code: event.code, reason: event.reason };
  }

  private envelopeOf(event: RawEvent): Envelope | undefined {
    if (event.kind !== 'frame') return undefined;
    let envelope = this.parsed.get(event);
    if (envelope === undefined) {
      const result = parseEnvelope(event.value);
      envelope = result.kind === 'event' ? result.envelope : null;
      this.parsed.set(event, envelope);
    }
    return envelope ?? undefined;
  }
}
