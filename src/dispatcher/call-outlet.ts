import type { RpcError } from '../protocol/index.js';

/** What a call says to its caller, before any transport has encoded it. */
export type CallEvent =
  /** Input credit (§4.7), or, with 0 bytes, word that the call is admitted (CR-1). */
  | { readonly type: 'credit'; readonly bytes: number }
  /** A stream's item, or a unary call's one answer (`final`). */
  | { readonly type: 'output'; readonly output: unknown; readonly final: boolean }
  | { readonly type: 'completed' }
  | { readonly type: 'error'; readonly error: RpcError };

/** Whatever a transport turns an event into; its size is what the call's buffer and credit count (§4.8). */
export interface Sized {
  readonly byteLength: number;
}

/**
 * Where one call's events go: a frame on the connection (WebSocket), on the call's own
 * stream (WebTransport), a line of an HTTP response, or a value in memory. The call
 * decides what is sent and when; the outlet only encodes and delivers.
 */
export interface CallOutlet<F extends Sized = Sized> {
  /** The event as this transport sends it; throws when it cannot be sent (the call then fails with INTERNAL). */
  encode(event: CallEvent): F;
  /**
   * Delivers an encoded event; resolves when the transport has taken it off the call's
   * hands, rejects when the connection is gone. `final`: the call's terminal event.
   */
  send(frame: F, final: boolean): Promise<void>;
}
