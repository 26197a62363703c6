import type { RpcError } from '../protocol/index.js';

/** What a call says to its caller, before any transport has encoded it. */
export type CallEvent =
  /** Input credit (§4.7), or, with 0 bytes, word that the call is admitted (CR-1); `seq`: the last input received, on a resumable call. */
  | { readonly type: 'credit'; readonly bytes: number; readonly seq?: number }
  /** A stream's item, or a unary call's one answer (`final`); `seq` numbers a resumable call's items (§4.9). */
  | { readonly type: 'output'; readonly output: unknown; readonly final: boolean; readonly seq?: number }
  /** The call may be resumed with `token` within `graceMs` of losing its connection (§4.9). */
  | { readonly type: 'resumable'; readonly token: string; readonly graceMs: number }
  /** A resume was accepted: the input the callee has, and the caller's input credit (§4.9). */
  | { readonly type: 'resumed'; readonly inputSeq: number; readonly inputCredit: number }
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
