import { Wakeup } from './wakeup.js';

/**
 * The credit rule (spec/PROTOCOL.md §4.7, §4.8), both sides of it, in one place.
 *
 * The receiver grants its peer a window of encoded bytes and grants again as its own
 * consumer takes what arrived (CR-3), not as frames arrive, in steps of `step` bytes,
 * so a consumer that stops holds at most one window plus one frame. The sender may
 * send a frame while its credit is positive and is charged the frame in full (CR-2).
 */
export class ReceiveWindow {
  private taken = 0;
  /** The peer's credit as this side counts it: granted, less what arrived. */
  private peerCredit: number;

  /** `step`: how much the consumer takes before it grants again (a fraction of `window`). */
  constructor(
    readonly window: number,
    private readonly step: number,
    private readonly grant: (bytes: number) => void,
  ) {
    this.peerCredit = window;
  }

  /** CR-2 from the receiving side: the peer may send while this is positive. */
  get hasCredit(): boolean {
    return this.peerCredit > 0;
  }

  /** The peer's credit as this side counts it: where a resumed peer starts again (§4.9). */
  get credit(): number {
    return this.peerCredit;
  }

  /** A frame of `bytes` arrived: it is charged to the peer's credit. */
  arrived(bytes: number): void {
    this.peerCredit -= bytes;
  }

  /** The consumer took `bytes`: once a step's worth has been taken, it is granted back. */
  take(bytes: number): void {
    this.taken += bytes;
    if (this.taken >= this.step) this.flush();
  }

  /** The peer was granted a whole window afresh (a resumed stream, §4.9): grants made before count no more. */
  renew(): void {
    this.peerCredit = this.window;
  }

  /** Grants back now whatever the consumer has taken and not yet granted. */
  flush(): void {
    if (this.taken <= 0) return;
    const bytes = this.taken;
    this.taken = 0;
    this.peerCredit += bytes;
    this.grant(bytes);
  }
}

/** The sender's side: what the peer granted and this side has not spent (CR-2). */
export class SendCredit {
  private readonly wakeup = new Wakeup();
  private stopped = false;

  constructor(private balance = 0) {}

  get available(): number {
    return this.balance;
  }

  /** CR-2: a frame may be sent while the credit is positive; it is then charged in full. */
  get hasCredit(): boolean {
    return this.balance > 0;
  }

  grant(bytes: number): void {
    this.balance += bytes;
    this.wakeup.wake();
  }

  charge(bytes: number): void {
    this.balance -= bytes;
  }

  /** The peer counts the credit afresh (a resumed call, §4.9): this is what it now holds, whatever was granted before. */
  reset(balance: number): void {
    this.balance = balance;
    this.wakeup.wake();
  }

  /** Resolves once the credit is positive, or the sender stopped (then `false`). */
  async untilCredit(): Promise<boolean> {
    while (this.balance <= 0 && !this.stopped) await this.wakeup.wait();
    return !this.stopped;
  }

  /** The sender is done: a wait for credit ends now. */
  stop(): void {
    this.stopped = true;
    this.wakeup.wake();
  }
}
