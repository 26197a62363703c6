import { RpcError } from '../protocol/index.js';
import { describeCaller, type Identity } from './identity.js';
import type { RoomWaiter } from './replay-budget.js';

/** What one identity holds for its readers. */
interface Held {
  readonly subject: string | null;
  /** Frames handed to a transport and not yet taken. */
  sent: number;
  /** Frames waiting for the caller's credit (CR-5). */
  forCredit: number;
  /** Its sources wait: set when `sent` reaches half the bound, cleared at a quarter. */
  congested: boolean;
  /** Made when a source first waits: most identities never fill half their bound. */
  waiters: Set<RoomWaiter> | undefined;
  /** Dropped from the table: an account that holds it takes the identity's current one. */
  dropped: boolean;
}

/**
 * Identities whose entry stays while they hold nothing: one caller's calls would otherwise
 * make and drop its entry at every frame. Past this many, an emptied entry is dropped, so
 * a server whose callers come and go (any subject an `authenticate` may give) keeps no more.
 */
const IDLE_ENTRIES = 1024;

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
  private readonly held = new Map<string | null, Held>();

  constructor(readonly bound: number) {}

  /** What the calls of `identity` add and take. */
  account(identity: Identity | null): OutboundAccount {
    return new OutboundAccount(this, identity?.subject ?? null);
  }

  /** Identities with an entry: those holding output, and up to IDLE_ENTRIES more. */
  get identities(): number {
    return this.held.size;
  }

  /** Bytes `subject` holds now, of both kinds. */
  bytesOf(subject: string | null): number {
    const held = this.held.get(subject);
    return held === undefined ? 0 : held.sent + held.forCredit;
  }

  /** `subject`'s entry, made when it has none. */
  entry(subject: string | null): Held {
    let held = this.held.get(subject);
    if (held === undefined) {
      held = { subject, sent: 0, forCredit: 0, congested: false, waiters: undefined, dropped: false };
      this.held.set(subject, held);
    }
    return held;
  }

  /** `bytes` more (or, negative, fewer) handed to a transport for `held`'s readers. */
  addSent(held: Held, bytes: number): void {
    held.sent += bytes;
    if (bytes > 0) {
      if (!held.congested && held.sent >= this.bound / 2) held.congested = true;
      return;
    }
    if (held.congested && held.sent <= this.bound / 4) {
      held.congested = false;
      const waiters = held.waiters;
      held.waiters = undefined;
      for (const waiter of waiters ?? []) waiter.roomOnConnection();
    }
    this.prune(held);
  }

  /** `bytes` more (or, negative, fewer) wait for the credit of `held`'s caller. */
  addForCredit(held: Held, bytes: number): void {
    held.forCredit += bytes;
    if (bytes < 0) this.prune(held);
  }

  over(held: Held): boolean {
    return held.sent + held.forCredit >= this.bound;
  }

  /** `waiter` hears once when `held`'s sent frames drain to a quarter of the bound. */
  wait(held: Held, waiter: RoomWaiter): void {
    if (held.congested) (held.waiters ??= new Set()).add(waiter);
  }

  forget(held: Held, waiter: RoomWaiter): void {
    if (held.waiters?.delete(waiter)) this.prune(held);
  }

  private prune(held: Held): void {
    if (this.held.size <= IDLE_ENTRIES || held.sent > 0 || held.forCredit > 0 || held.congested || held.waiters?.size) return;
    held.dropped = true;
    this.held.delete(held.subject);
  }
}

/** One call's view of its identity's output (IdentityOutbound): what it adds, and whether it must wait or stop. */
export class OutboundAccount {
  private current: Held | undefined;

  constructor(
    private readonly outbound: IdentityOutbound | undefined,
    private readonly subject: string | null,
  ) {}

  /** An account no bound holds (a call made outside any dispatcher's rules, in a test). */
  static none(): OutboundAccount {
    return new OutboundAccount(undefined, null);
  }

  addSent(bytes: number): void {
    if (this.outbound) this.outbound.addSent(this.held(this.outbound), bytes);
  }

  addForCredit(bytes: number): void {
    if (this.outbound) this.outbound.addForCredit(this.held(this.outbound), bytes);
  }

  /** The identity's transports hold half its bound or more: its pull sources wait. */
  get congested(): boolean {
    return this.outbound !== undefined && this.held(this.outbound).congested;
  }

  /** The identity holds its whole bound: a new output is dropped, and its call ends with `excess()`. */
  get over(): boolean {
    return this.outbound !== undefined && this.outbound.over(this.held(this.outbound));
  }

  wait(waiter: RoomWaiter): void {
    if (this.outbound) this.outbound.wait(this.held(this.outbound), waiter);
  }

  forget(waiter: RoomWaiter): void {
    if (this.outbound) this.outbound.forget(this.held(this.outbound), waiter);
  }

  /** Why a call's newest output was dropped. */
  excess(): RpcError {
    const outbound = this.outbound!;
    return RpcError.of(
      'SLOW_CONSUMER',
      `${describeCaller(this.subject)} holds ${outbound.bytesOf(this.subject)} bytes of output its readers have not taken, its bound of ${outbound.bound} (maxOutboundBytesPerIdentity): this call's newest output was dropped`,
    );
  }

  private held(outbound: IdentityOutbound): Held {
    if (this.current === undefined || this.current.dropped) this.current = outbound.entry(this.subject);
    return this.current;
  }
}
