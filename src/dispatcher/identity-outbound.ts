import { RpcError } from '../protocol/index.js';
import { describeCaller, type Identity } from './identity.js';
import type { RoomWaiter } from './replay-budget.js';

interface Held {
  /** Frames handed to a transport and not yet taken. */
  sent: number;
  /** Frames waiting for the caller's credit (CR-5). */
  forCredit: number;
  /** Its sources wait: set when `sent` reaches half the bound, cleared at a quarter. */
  congested: boolean;
  readonly waiters: Set<RoomWaiter>;
}

/**
 * The output each identity's calls hold for their readers, over all its connections and
 * transports (spec/PROTOCOL.md §8, `maxOutboundBytesPerIdentity`): frames a transport has
 * not yet taken, and frames waiting for credit. One connection's bound (BP-4) does not
 * bound a caller who opens many, each slow but alive, nor a call's credit bound one who
 * opens many calls and grants none. The identity is LIM-3's: its subject, or every
 * anonymous caller together.
 *
 * From half the bound of sent frames the identity's pull sources wait, until they drain
 * to a quarter: a wake at every frame taken would run thousands of waiting sources for
 * one frame's room. Frames waiting for credit do not make sources wait: only the caller's
 * credit drains them, so waiting would hold its other streams until it read these (a
 * caller that reads one stream to its end before the next would never get there), and a
 * fan-out's own targets, whose credit its waiting source grants, never. What comes once
 * the identity holds the whole bound, both kinds together, is dropped, and its call ends
 * (`OutboundAccount.over`).
 */
export class IdentityOutbound {
  /** Identities that hold bytes or have sources waiting; the others have no entry. */
  private readonly held = new Map<string | null, Held>();

  constructor(readonly bound: number) {}

  /** What the calls of `identity` add and take. */
  account(identity: Identity | null): OutboundAccount {
    return new OutboundAccount(this, identity?.subject ?? null);
  }

  /** Bytes `subject` holds now, of both kinds. */
  bytesOf(subject: string | null): number {
    const held = this.held.get(subject);
    return held === undefined ? 0 : held.sent + held.forCredit;
  }

  /** `bytes` more (or, negative, fewer) handed to a transport for `subject`'s readers. */
  addSent(subject: string | null, bytes: number): void {
    const held = this.entry(subject);
    held.sent += bytes;
    if (bytes > 0) {
      if (!held.congested && held.sent >= this.bound / 2) held.congested = true;
      return;
    }
    if (held.congested && held.sent <= this.bound / 4) {
      held.congested = false;
      const waiters = [...held.waiters];
      held.waiters.clear();
      for (const waiter of waiters) waiter.roomOnConnection();
    }
    this.prune(subject, held);
  }

  /** `bytes` more (or, negative, fewer) wait for `subject`'s credit. */
  addForCredit(subject: string | null, bytes: number): void {
    const held = this.entry(subject);
    held.forCredit += bytes;
    if (bytes < 0) this.prune(subject, held);
  }

  congested(subject: string | null): boolean {
    return this.held.get(subject)?.congested ?? false;
  }

  over(subject: string | null): boolean {
    return this.bytesOf(subject) >= this.bound;
  }

  /** `waiter` hears once when `subject`'s sent frames drain to a quarter of the bound. */
  wait(subject: string | null, waiter: RoomWaiter): void {
    const held = this.held.get(subject);
    if (held?.congested) held.waiters.add(waiter);
  }

  forget(subject: string | null, waiter: RoomWaiter): void {
    const held = this.held.get(subject);
    if (held?.waiters.delete(waiter)) this.prune(subject, held);
  }

  private entry(subject: string | null): Held {
    let held = this.held.get(subject);
    if (held === undefined) {
      held = { sent: 0, forCredit: 0, congested: false, waiters: new Set() };
      this.held.set(subject, held);
    }
    return held;
  }

  private prune(subject: string | null, held: Held): void {
    if (held.sent <= 0 && held.forCredit <= 0 && held.waiters.size === 0 && !held.congested) this.held.delete(subject);
  }
}

/** One call's view of its identity's output (IdentityOutbound): what it adds, and whether it must wait or stop. */
export class OutboundAccount {
  constructor(
    private readonly outbound: IdentityOutbound | undefined,
    private readonly subject: string | null,
  ) {}

  /** An account no bound holds (a call made outside any dispatcher's rules, in a test). */
  static none(): OutboundAccount {
    return new OutboundAccount(undefined, null);
  }

  addSent(bytes: number): void {
    this.outbound?.addSent(this.subject, bytes);
  }

  addForCredit(bytes: number): void {
    this.outbound?.addForCredit(this.subject, bytes);
  }

  /** The identity's transports hold half its bound or more: its pull sources wait. */
  get congested(): boolean {
    return this.outbound?.congested(this.subject) ?? false;
  }

  /** The identity holds its whole bound: a new output is dropped, and its call ends with `excess()`. */
  get over(): boolean {
    return this.outbound?.over(this.subject) ?? false;
  }

  wait(waiter: RoomWaiter): void {
    this.outbound?.wait(this.subject, waiter);
  }

  forget(waiter: RoomWaiter): void {
    this.outbound?.forget(this.subject, waiter);
  }

  /** Why a call's newest output was dropped. */
  excess(): RpcError {
    const outbound = this.outbound!;
    return RpcError.of(
      'SLOW_CONSUMER',
      `${describeCaller(this.subject)} holds ${outbound.bytesOf(this.subject)} bytes of output its readers have not taken, its bound of ${outbound.bound} (maxOutboundBytesPerIdentity): this call's newest output was dropped`,
    );
  }
}
