/** Something that waits for replay room and is told when there may be some. */
export interface RoomWaiter {
  roomOnConnection(): void;
}

/**
 * Replay bytes kept by resumable calls, per identity and for the whole server
 * (spec/PROTOCOL.md §4.9): past either bound every resumable call of that identity
 * (or of the server) waits, as behind a slow reader, until callers acknowledge.
 */
export class ReplayBudget {
  private total = 0;
  private readonly perIdentity = new Map<string | null, number>();
  private waiters = new Set<RoomWaiter>();

  constructor(
    private readonly maxPerIdentity: number,
    private readonly maxTotal: number,
  ) {}

  get bytes(): number {
    return this.total;
  }

  /** Calls waiting for room. */
  get waiting(): number {
    return this.waiters.size;
  }

  /** Over a bound, or still over it once `releasing` bytes of `subject` are given back. */
  exhausted(subject: string | null, releasing = 0): boolean {
    return this.total - releasing >= this.maxTotal || (this.perIdentity.get(subject) ?? 0) - releasing >= this.maxPerIdentity;
  }

  take(subject: string | null, bytes: number): void {
    this.total += bytes;
    this.perIdentity.set(subject, (this.perIdentity.get(subject) ?? 0) + bytes);
  }

  give(subject: string | null, bytes: number): void {
    if (bytes === 0) return;
    this.total -= bytes;
    const left = (this.perIdentity.get(subject) ?? 0) - bytes;
    if (left <= 0) this.perIdentity.delete(subject);
    else this.perIdentity.set(subject, left);
    if (this.waiters.size === 0) return;
    const waiters = this.waiters;
    this.waiters = new Set();
    for (const waiter of waiters) waiter.roomOnConnection();
  }

  /** `waiter` hears once when any bytes are given back (it checks again itself). */
  wait(waiter: RoomWaiter): void {
    this.waiters.add(waiter);
  }

  forget(waiter: RoomWaiter): void {
    this.waiters.delete(waiter);
  }
}
