/**
 * The pure parts of `callwire exec` over many targets (docs/cli.md "Many containers"):
 * lines prefixed with their target, and outputs grouped as dshbak -c groups them.
 */

/** The longest unfinished line kept for one target's stream; a longer one is written in pieces this size. */
export const PARTIAL_LINE_MAX_BYTES = 64 * 1024;

const NEWLINE = 0x0a;

/**
 * Each target's output as whole lines, each prefixed `TARGET: `: bytes are kept per target
 * and stream until their line ends, so a line of one target is never mixed with another's.
 */
export class TargetLines {
  private readonly partial = new Map<string, Buffer>();

  constructor(private readonly maxPartialBytes = PARTIAL_LINE_MAX_BYTES) {}

  /** The complete lines these bytes finish, prefixed, as one buffer (empty when none). */
  push(target: string, stream: 'stdout' | 'stderr', bytes: Uint8Array): Buffer {
    const key = `${stream}\0${target}`;
    let rest = Buffer.concat([this.partial.get(key) ?? Buffer.alloc(0), bytes]);
    const prefix = Buffer.from(`${target}: `);
    const out: Buffer[] = [];
    for (;;) {
      const end = rest.indexOf(NEWLINE);
      if (end >= 0 && end <= this.maxPartialBytes) {
        out.push(prefix, rest.subarray(0, end + 1));
        rest = rest.subarray(end + 1);
      } else if (rest.byteLength >= this.maxPartialBytes) {
        out.push(prefix, rest.subarray(0, this.maxPartialBytes), Buffer.from('\n'));
        rest = rest.subarray(this.maxPartialBytes);
      } else break;
    }
    if (rest.byteLength > 0) this.partial.set(key, Buffer.from(rest));
    else this.partial.delete(key);
    return Buffer.concat(out);
  }

  /** The target ended: its unfinished line of `stream`, prefixed and ended with a newline (empty when none). */
  flush(target: string, stream: 'stdout' | 'stderr'): Buffer {
    const key = `${stream}\0${target}`;
    const rest = this.partial.get(key);
    this.partial.delete(key);
    return rest ? Buffer.concat([Buffer.from(`${target}: `), rest, Buffer.from('\n')]) : Buffer.alloc(0);
  }
}

/** What `--group` and `--json` keep of one target: 1 MiB, and 256 MiB over all targets. */
export function captureLimitBytes(targets: number): number {
  return Math.min(1024 * 1024, Math.floor((256 * 1024 * 1024) / Math.max(1, targets)));
}

/** One target's output, as `--group` kept it. */
export interface Captured {
  readonly target: string;
  readonly output: Buffer;
  readonly truncated: boolean;
}

export interface OutputGroup {
  readonly targets: string[];
  readonly output: Buffer;
  readonly truncated: boolean;
}

/** Targets with byte-identical output together (dshbak -c), in order of their first target; targets sorted within a group. */
export function groupOutputs(captured: readonly Captured[]): OutputGroup[] {
  const groups = new Map<string, { targets: string[]; output: Buffer; truncated: boolean }>();
  for (const c of [...captured].sort((a, b) => compare(a.target, b.target))) {
    const key = `${c.truncated ? 1 : 0}${c.output.toString('base64')}`;
    const group = groups.get(key);
    if (group) group.targets.push(c.target);
    else groups.set(key, { targets: [c.target], output: c.output, truncated: c.truncated });
  }
  return [...groups.values()];
}

/**
 * dshbak -c's layout: a rule, the group's targets, a rule, the output (ended with a
 * newline when it lacked one), a note when only the first part of it was kept.
 */
export function formatGroups(groups: readonly OutputGroup[]): Buffer {
  const parts: Buffer[] = [];
  for (const group of groups) {
    const names = group.targets.join(',');
    const rule = '-'.repeat(Math.min(Math.max(16, names.length), 80));
    parts.push(Buffer.from(`${rule}\n${names}\n${rule}\n`), group.output);
    if (group.output.byteLength > 0 && group.output[group.output.byteLength - 1] !== NEWLINE) parts.push(Buffer.from('\n'));
    if (group.truncated) parts.push(Buffer.from('[callwire: output truncated; only its beginning is grouped]\n'));
  }
  return Buffer.concat(parts);
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
