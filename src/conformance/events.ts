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
 * one queue of the raw peers: the conformance runner's and the in-memory test
 * client's (src/testing).
 */
export class EventQueue<E = RawEvent> {
  private readonly events: E[] = [];
  private readonly consumed = new Set<number>();
  private waiters: (() => void)[] = [];

  push(event: E): void {
    this.events.push(event);
    for (const wake of this.waiters.splice(0)) wake();
  }

  /** The first unconsumed event that `belongs`, waiting up to `timeoutMs`; consumes it. */
  async take(belongs: (e: E) => boolean, timeoutMs: number): Promise<E | undefined> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      for (let i = 0; i < this.events.length; i++) {
        if (!this.consumed.has(i) && belongs(this.events[i] as E)) {
          this.consumed.add(i);
          return this.events[i];
        }
      }
      const left = deadline - Date.now();
      if (left <= 0) return undefined;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  /** Unconsumed events that `belong`, without consuming them. */
  pending(belongs: (e: E) => boolean): E[] {
    return this.events.filter((e, i) => !this.consumed.has(i) && belongs(e));
  }

  /** Every event so far, consumed or not, in order. */
  all(): readonly E[] {
    return this.events;
  }
}

export function idOf(value: unknown): string | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  const id = (value as Record<string, unknown>)['id'];
  return typeof id === 'string' ? id : undefined;
}
