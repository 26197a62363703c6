import type { Operation } from './operation.js';

/** Where a call's frames go: the connection (WebSocket) or the call's own stream (WebTransport). */
export interface Outlet {
  /** `final`: the call's terminal frame, after which a per-call stream ends. */
  send(frame: Uint8Array, final: boolean): Promise<void>;
}

/**
 * Server-side state of one admitted call: its cancellation, its teardown and the
 * bytes it has handed to the transport that the transport has not taken yet (§8).
 */
export class LiveCall {
  readonly controller = new AbortController();
  ended = false;
  pendingBytes = 0;
  private deadlineTimer: ReturnType<typeof setTimeout> | undefined;
  private teardownFn: (() => void) | undefined;
  private roomWaiters: (() => void)[] = [];

  constructor(
    readonly id: string,
    readonly op: Operation,
    readonly maxBufferedBytes: number,
    readonly outlet: Outlet,
  ) {}

  /** Ends the call through `onExpiry` after `ms`, unless it ended first (DL-1); the timer dies with the call. */
  setDeadline(ms: number, onExpiry: () => void): void {
    this.deadlineTimer = setTimeout(() => {
      if (!this.ended) onExpiry();
    }, ms);
  }

  get full(): boolean {
    return this.pendingBytes >= this.maxBufferedBytes;
  }

  /** Sets what cancels the handler's source; runs at once if the call already ended. */
  set teardown(fn: () => void) {
    this.teardownFn = fn;
    if (this.ended) this.runTeardown();
  }

  /** Resolves when the call's buffer has room again, or the call ended. */
  waitForRoom(): Promise<void> {
    if (!this.full || this.ended) return Promise.resolve();
    return new Promise((resolve) => this.roomWaiters.push(resolve));
  }

  released(bytes: number): void {
    this.pendingBytes -= bytes;
    if (!this.full) this.wakeWaiters();
  }

  /**
   * Ends the call: no frame may follow except the one the caller sends next.
   * Fires the AbortSignal and tears the source down in this same turn (ABT-1).
   */
  end(cancelHandler: boolean): void {
    if (this.ended) return;
    this.ended = true;
    if (this.deadlineTimer !== undefined) clearTimeout(this.deadlineTimer);
    if (cancelHandler) this.controller.abort(new DOMException('call cancelled', 'AbortError'));
    this.runTeardown();
    this.wakeWaiters();
  }

  private runTeardown(): void {
    const fn = this.teardownFn;
    this.teardownFn = undefined;
    if (!fn) return;
    try {
      fn();
    } catch {
      // A teardown that throws must not stop the others (or the session) from closing.
    }
  }

  private wakeWaiters(): void {
    const waiters = this.roomWaiters;
    this.roomWaiters = [];
    for (const wake of waiters) wake();
  }
}
