import { isUtf8 } from 'node:buffer';
import { escapeControls } from './cp/names.js';

/**
 * The pure parts of `callwire exec` over many targets (docs/cli.md "Many containers"):
 * lines prefixed with their target, and outputs grouped as dshbak -c groups them, each
 * target's bytes with the controls that drive a terminal escaped.
 */

/** The longest unfinished line kept for one target's stream; a longer one is written in pieces this size. */
export const PARTIAL_LINE_MAX_BYTES = 64 * 1024;

const NEWLINE = 0x0a;
const NEWLINE_BYTES = Buffer.from('\n');

/**
 * `bytes` as a terminal may show them beside another target's (docs/security.md "Fan-out",
 * output that forges): every control character but tab and newline escaped as `callwire cp`
 * escapes what it shows (`\r`, `\x1b`, the C1 controls U+0080 to U+009F), and a byte 0x80
 * to 0x9F that is not part of a UTF-8 character escaped too (an 8-bit terminal reads 0x9B
 * as CSI). Everything else, UTF-8 and other bytes, is kept as it is.
 */
export function escapeTerminalControls(bytes: Uint8Array): Buffer {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (!mayHoldControls(buffer)) return buffer;
  if (isUtf8(buffer)) return escapedText(buffer);
  const out: Buffer[] = [];
  let kept = 0;
  let at = 0;
  const keepUpTo = (end: number): void => {
    if (end > kept) out.push(escapedText(buffer.subarray(kept, end)));
  };
  while (at < buffer.byteLength) {
    const length = utf8SequenceLength(buffer, at);
    if (length > 0) {
      at += length;
      continue;
    }
    keepUpTo(at);
    const byte = buffer[at]!;
    out.push(byte >= 0x80 && byte <= 0x9f ? Buffer.from(escapeControls(String.fromCharCode(byte))) : buffer.subarray(at, at + 1));
    kept = ++at;
  }
  keepUpTo(at);
  return out.length === 1 ? out[0]! : Buffer.concat(out);
}

/**
 * Whether `bytes` has a control byte or one in 0x80-0x9F (a C1 control's own byte, or a
 * UTF-8 continuation): the one pass most output, ASCII text, takes, with nothing made.
 */
function mayHoldControls(bytes: Uint8Array): boolean {
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i]!;
    if ((byte < 0x20 && byte !== 0x09 && byte !== 0x0a) || (byte >= 0x7f && byte <= 0x9f)) return true;
  }
  return false;
}

/** Valid UTF-8 with its controls escaped: the same bytes when it has none. */
function escapedText(bytes: Buffer): Buffer {
  const text = bytes.toString('utf8');
  const escaped = escapeControls(text);
  return escaped === text ? bytes : Buffer.from(escaped);
}

/** The length of the valid UTF-8 character at `at` (RFC 3629: no overlong form, no surrogate), or 0. */
function utf8SequenceLength(bytes: Buffer, at: number): number {
  const lead = bytes[at]!;
  if (lead < 0x80) return 1;
  const continues = (i: number, low = 0x80, high = 0xbf): boolean => {
    const byte = bytes[at + i];
    return byte !== undefined && byte >= low && byte <= high;
  };
  if (lead >= 0xc2 && lead <= 0xdf) return continues(1) ? 2 : 0;
  if (lead >= 0xe0 && lead <= 0xef) {
    const [low, high] = lead === 0xe0 ? [0xa0, 0xbf] : lead === 0xed ? [0x80, 0x9f] : [0x80, 0xbf];
    return continues(1, low, high) && continues(2) ? 3 : 0;
  }
  if (lead >= 0xf0 && lead <= 0xf4) {
    const [low, high] = lead === 0xf0 ? [0x90, 0xbf] : lead === 0xf4 ? [0x80, 0x8f] : [0x80, 0xbf];
    return continues(1, low, high) && continues(2) && continues(3) ? 4 : 0;
  }
  return 0;
}

/** Where to cut `bytes` at most `max` bytes in: back to the start of a UTF-8 character, unless that leaves nothing. */
function cutAt(bytes: Buffer, max: number): number {
  let cut = max;
  while (cut > 0 && max - cut < 3 && ((bytes[cut] ?? 0) & 0xc0) === 0x80) cut--;
  return cut > 0 ? cut : max;
}

/**
 * Each target's output as whole lines, each prefixed `TARGET: `: bytes are kept per target
 * and stream until their line ends, so a line of one target is never mixed with another's,
 * and each line's controls are escaped, so none can move the cursor back over its prefix.
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
    // Most output has no control at all: looked for once, not line by line.
    const clean = !mayHoldControls(rest);
    for (;;) {
      const end = rest.indexOf(NEWLINE);
      if (end >= 0 && end <= this.maxPartialBytes) {
        if (clean) out.push(prefix, rest.subarray(0, end + 1));
        else out.push(prefix, escapeTerminalControls(rest.subarray(0, end)), NEWLINE_BYTES);
        rest = rest.subarray(end + 1);
      } else if (rest.byteLength >= this.maxPartialBytes) {
        // A piece ends between characters, so each piece is text on its own.
        const cut = cutAt(rest, this.maxPartialBytes);
        out.push(prefix, escapeTerminalControls(rest.subarray(0, cut)), NEWLINE_BYTES);
        rest = rest.subarray(cut);
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
    return rest ? Buffer.concat([Buffer.from(`${target}: `), escapeTerminalControls(rest), NEWLINE_BYTES]) : Buffer.alloc(0);
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
    parts.push(Buffer.from(`${rule}\n${names}\n${rule}\n`), escapeTerminalControls(group.output));
    if (group.output.byteLength > 0 && group.output[group.output.byteLength - 1] !== NEWLINE) parts.push(Buffer.from('\n'));
    if (group.truncated) parts.push(Buffer.from('[callwire: output truncated; only its beginning is grouped]\n'));
  }
  return Buffer.concat(parts);
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
