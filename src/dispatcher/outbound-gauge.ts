/**
 * The bytes a connection's one channel holds that its peer has not taken, every frame
 * alike (calls' output, unary answers, refusals, credit): the one count behind BP-3 and
 * BP-4 (spec/PROTOCOL.md §8). At the bound it is congested: the transport stops reading
 * the peer and the calls' pull sources wait. It drains at half the bound, not just under
 * it: at the bound every frame taken would wake thousands of paused calls for one
 * frame's room.
 */
export class OutboundGauge {
  private bytes = 0;
  private full = false;

  constructor(
    private readonly bound: number,
    /** Called when the gauge goes from congested to drained. */
    private readonly onDrained: () => void,
  ) {}

  get congested(): boolean {
    return this.full;
  }

  /** `n` more bytes wait; true when this made the connection congested. */
  add(n: number): boolean {
    this.bytes += n;
    if (this.full || this.bytes < this.bound) return false;
    this.full = true;
    return true;
  }

  /** The peer took `n` bytes. */
  taken(n: number): void {
    this.bytes -= n;
    if (!this.full || this.bytes > this.bound / 2) return;
    this.full = false;
    this.onDrained();
  }
}
