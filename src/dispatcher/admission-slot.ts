/**
 * A call's place under its identity's caps (LIM-3), held by one owner at a time: the
 * running call, then, for a resumable one, the registry that keeps it. Handing it over
 * is explicit (`handOver`), so no two owners can both give it back.
 */
export class AdmissionSlot {
  constructor(private giveBack: (() => void) | undefined) {}

  /** A slot that holds nothing (a call no cap counted). */
  static none(): AdmissionSlot {
    return new AdmissionSlot(undefined);
  }

  /** Whether releasing this slot still gives something back. */
  get held(): boolean {
    return this.giveBack !== undefined;
  }

  /** A new slot with this one's place; this one holds nothing any more. */
  handOver(): AdmissionSlot {
    const slot = new AdmissionSlot(this.giveBack);
    this.giveBack = undefined;
    return slot;
  }

  /** Gives the place back, once. */
  release(): void {
    const giveBack = this.giveBack;
    this.giveBack = undefined;
    giveBack?.();
  }
}
