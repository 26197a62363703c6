/**
 * A row of the bench's table: one measurement of one subject in one scenario, with its
 * ratios to the peers measured in the same rounds.
 */
import { median, ratios, spread } from './measure.js';

export interface RowKey {
  /** The scenario's group: unary, streaming, exec, … */
  readonly group: string;
  /** What was measured, within the group: "calls/s @1 in flight". */
  readonly metric: string;
  readonly subject: string;
  readonly unit: string;
}

/** The row's value divided by a peer's, measured in the same rounds. */
export interface Comparison {
  readonly peer: string;
  /** The peer's median. */
  readonly peerValue: number;
  /** The median of the per-round ratios (rounds interleaved), or value / peerValue. */
  readonly ratio: number;
  readonly ratioMin?: number;
  readonly ratioMax?: number;
}

export interface Row extends RowKey {
  /** The median of the runs. */
  readonly value: number;
  /** The runs' spread, when there were several. */
  readonly min?: number;
  readonly max?: number;
  readonly vs: readonly Comparison[];
}

/** Collects rows, and tells each as it comes (the bench takes minutes). */
export class Recorder {
  readonly rows: Row[] = [];

  constructor(private readonly tell: (row: Row) => void = () => undefined) {}

  /** One value, each peer's one value beside it. */
  one(key: RowKey, value: number, peers: Readonly<Record<string, number>> = {}): void {
    const vs = Object.entries(peers)
      .filter(([, peerValue]) => peerValue > 0)
      .map(([peer, peerValue]) => ({ peer, peerValue, ratio: value / peerValue }));
    this.add({ ...key, value, vs });
  }

  /** Interleaved runs: their spread, and the ratio to each peer round by round. */
  runs(key: RowKey, values: readonly number[], peers: Readonly<Record<string, readonly number[]>> = {}): void {
    const s = spread([...values]);
    const vs = Object.entries(peers).map(([peer, peerValues]) => {
      const r = ratios([...values], [...peerValues]);
      return { peer, peerValue: median([...peerValues]), ratio: r.median, ratioMin: r.min, ratioMax: r.max };
    });
    this.add({ ...key, value: s.median, min: s.min, max: s.max, vs });
  }

  private add(row: Row): void {
    this.rows.push(row);
    this.tell(row);
  }
}
