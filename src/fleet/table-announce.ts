import { BEAT_BYTES_PER_SECOND, MAX_BEAT_BYTES, MAX_LABEL_BYTES_PER_CONTAINER, MAX_LABEL_BYTES_PER_HOST, MAX_TABLE_BYTES, MAX_TABLE_ENTRIES, MAX_TABLE_PARTS } from './beat-gate.js';
import { labelBytes, type Beat, type RoutedContainer } from './beat.js';

/** What the engine's list says of a container (`GET /containers/json`), as far as the table keeps it. */
export interface EngineRow {
  readonly Id: string;
  readonly Names?: readonly string[];
  readonly Image?: string;
  readonly State?: string;
  readonly Status?: string;
  readonly Created?: number;
  readonly Labels?: Readonly<Record<string, string>> | null;
}

/**
 * The agent's table from the engine's rows, labels within their bounds (docs/fleet.md
 * "Security"): a container whose labels pass 4 KiB, or that come after the host's 1 MiB,
 * is announced without them and `labelsOmitted`, and gateways list its host by calling it.
 */
export function tableOf(rows: readonly EngineRow[]): RoutedContainer[] {
  let hostLabels = 0;
  return rows.map((row) => {
    const labels = row.Labels ?? {};
    const bytes = labelBytes(labels);
    const kept = bytes <= MAX_LABEL_BYTES_PER_CONTAINER && hostLabels + bytes <= MAX_LABEL_BYTES_PER_HOST;
    if (kept) hostLabels += bytes;
    return {
      id: row.Id,
      names: (row.Names ?? []).slice(0, 16).map((n) => n.replace(/^\//, '')),
      ...(kept ? { labels: { ...labels } } : { labelsOmitted: true as const }),
      ...(row.Image === undefined ? {} : { image: row.Image }),
      ...(row.State === undefined ? {} : { state: row.State }),
      ...(row.Status === undefined ? {} : { status: row.Status }),
      ...(row.Created === undefined ? {} : { created: row.Created }),
    };
  });
}

/** Room left in a part's message for its beat's own fields. */
const ENVELOPE_BYTES = 256;

/**
 * The beats that carry `containers`: one when the table fits one message of `maxPayload`
 * bytes, else parts of the same `version` each under it; undefined when it is more than a
 * gateway takes (containers, parts or bytes: src/fleet/beat-gate.ts), which it would drop.
 */
export function tableMessages(beat: Omit<Beat, 'containers' | 'part' | 'parts' | 'withheld'>, containers: readonly RoutedContainer[], maxPayload: number): string[] | undefined {
  if (containers.length > MAX_TABLE_ENTRIES) return undefined;
  const whole = JSON.stringify({ ...beat, containers });
  const budget = Math.min(maxPayload, MAX_BEAT_BYTES) - ENVELOPE_BYTES;
  if (Buffer.byteLength(whole) <= budget) return [whole];
  const chunks: string[][] = [[]];
  let size = 0;
  for (const c of containers) {
    const encoded = JSON.stringify(c);
    const bytes = Buffer.byteLength(encoded) + 1;
    if (bytes > budget) return undefined;
    if (size + bytes > budget) {
      chunks.push([]);
      size = 0;
    }
    chunks[chunks.length - 1]!.push(encoded);
    size += bytes;
  }
  if (chunks.length > MAX_TABLE_PARTS) return undefined;
  const head = JSON.stringify(beat).slice(0, -1);
  const messages = chunks.map((chunk, part) => `${head},"part":${part},"parts":${chunks.length},"containers":[${chunk.join(',')}]}`);
  return messages.reduce((sum, m) => sum + Buffer.byteLength(m), 0) > MAX_TABLE_BYTES ? undefined : messages;
}

/**
 * Sends a table's parts no faster than a gateway's beat gate reads them (half its byte
 * rate), so an honest host's large table is never dropped there. A table sent while
 * another is still going out replaces what is left of that one.
 */
export class PartPacer {
  private queue: string[] = [];
  private timer: ReturnType<typeof setTimeout> | undefined;
  private budget = BEAT_BYTES_PER_SECOND / 2;
  private at = Date.now();

  constructor(private readonly publish: (message: string) => void) {}

  /** Whether parts of a table are still going out. */
  get busy(): boolean {
    return this.queue.length > 0;
  }

  send(messages: string[]): void {
    this.queue = [...messages];
    this.pump();
  }

  stop(): void {
    this.queue = [];
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private pump(): void {
    if (this.timer !== undefined) return;
    const rate = BEAT_BYTES_PER_SECOND / 2;
    for (;;) {
      const next = this.queue[0];
      if (next === undefined) return;
      const now = Date.now();
      this.budget = Math.min(rate, this.budget + ((now - this.at) / 1000) * rate);
      this.at = now;
      const bytes = Buffer.byteLength(next);
      if (this.budget < bytes && this.budget < rate) {
        this.timer = setTimeout(() => {
          this.timer = undefined;
          this.pump();
        }, Math.ceil(((Math.min(bytes, rate) - this.budget) / rate) * 1000));
        this.timer.unref();
        return;
      }
      this.budget -= bytes;
      this.queue.shift();
      this.publish(next);
    }
  }
}
