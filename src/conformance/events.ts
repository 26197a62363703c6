import { Wakeup } from '../flow/index.js';
import type { Codec } from '../protocol/index.js';

/** What a raw connection observed, in arrival order. */
export type RawEvent =
  | { readonly kind: 'frame'; readonly value: unknown; readonly id: string | undefined }
  | { readonly kind: 'undecodable'; readonly error: string }
  | { readonly kind: 'close'; readonly code: number; readonly reason: string }
  | { readonly kind: 'stream-reset'; readonly id: string | undefined }
  /** WebSocket: a ping from the server (§5.5), answered or not. */
  | { readonly kind: 'ping' }
  /**
   * WebTransport: the callee closed its side of a call's stream (WT-2). `early`: before
   * any `call.completed` or `call.error` on it, which over a carrier that cannot reset
   * stands for a reset (§5.4).
   */
  | { readonly kind: 'stream-end'; readonly id: string | undefined; readonly early?: boolean };

/**
 * Events in arrival order; each is consumed at most once by an expectation. The
 * one queue of the raw peers (raw-peer.ts), over a socket or in memory (src/testing).
 */
export class EventQueue<E = RawEvent> {
  private readonly events: E[] = [];
  private readonly consumed = new Set<number>();
  private readonly arrived = new Wakeup();
  private diverted: ((event: E) => void) | undefined;

  push(event: E): void {
    if (this.diverted) return this.diverted(event);
    this.events.push(event);
    this.arrived.wake();
  }

  /**
   * From now on each event goes to `listener` and is not kept (a peer flooded with
   * answers would otherwise hold them all); `undefined` keeps them again.
   */
  divert(listener: ((event: E) => void) | undefined): void {
    this.diverted = listener;
  }

  /** The first unconsumed event that `belongs`, waiting up to `timeoutMs`; consumes it. */
  take(belongs: (e: E) => boolean, timeoutMs: number): Promise<E | undefined> {
    return this.wait(() => {
      const i = this.events.findIndex((e, at) => !this.consumed.has(at) && belongs(e));
      if (i < 0) return undefined;
      this.consumed.add(i);
      return this.events[i];
    }, timeoutMs);
  }

  /** The first event, consumed or not, that `belongs`, waiting up to `timeoutMs`; consumes nothing. */
  seen(belongs: (e: E) => boolean, timeoutMs: number): Promise<E | undefined> {
    return this.wait(() => this.events.find(belongs), timeoutMs);
  }

  /** Unconsumed events that `belong`, without consuming them. */
  pending(belongs: (e: E) => boolean): E[] {
    return this.events.filter((e, i) => !this.consumed.has(i) && belongs(e));
  }

  /** Every event so far, consumed or not, in order. */
  all(): readonly E[] {
    return this.events;
  }

  private async wait(find: () => E | undefined, timeoutMs: number): Promise<E | undefined> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = find();
      if (found !== undefined) return found;
      const left = deadline - Date.now();
      if (left <= 0) return undefined;
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([this.arrived.wait(), new Promise<void>((resolve) => (timer = setTimeout(resolve, left)))]);
      clearTimeout(timer);
    }
  }
}

/** One message as the peer records it: the decoded frame, or why it was not one. */
export function decodedEvent(codec: Codec, bytes: Uint8Array): RawEvent {
  try {
    const value = codec.decode(bytes);
    return { kind: 'frame', value, id: idOf(value) };
  } catch (error) {
    return { kind: 'undecodable', error: String(error) };
  }
}

export function idOf(value: unknown): string | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  const id = (value as Record<string, unknown>)['id'];
  return typeof id === 'string' ? id : undefined;
}
