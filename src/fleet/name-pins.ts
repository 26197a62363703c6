import { HOST_ID_PATTERN } from './subjects.js';

/**
 * Container names an operator pinned to hosts (`serve --nats … --pin NAME=HOST`,
 * docs/fleet.md "Security"): a pinned name resolves to its host only, whatever the
 * other hosts announce, and another host's announcement of it is ignored. A host's
 * NATS credentials let it announce any name; a pin is what it cannot override.
 */
export interface NamePin {
  /** A container name, or a prefix ending in `*` (`db-*`). */
  readonly pattern: string;
  readonly host: string;
}

const PIN = /^([a-zA-Z0-9][a-zA-Z0-9_.-]*\*?)=(.+)$/;

/** `NAME=HOST` or `PREFIX*=HOST`, as `--pin` takes it. */
export function parsePin(text: string): NamePin {
  const m = PIN.exec(text);
  if (!m || !HOST_ID_PATTERN.test(m[2]!)) throw new Error(`--pin "${text}": must be NAME=HOST (or PREFIX*=HOST), NAME a container name and HOST a host id`);
  return { pattern: m[1]!, host: m[2]! };
}

export class NamePins {
  private readonly exact = new Map<string, string>();
  private readonly prefixes: { prefix: string; host: string }[] = [];

  constructor(pins: readonly NamePin[] = []) {
    const seen = new Map<string, string>();
    for (const pin of pins) {
      // One pattern given two hosts is a mistake to hear at start, not at a call.
      const earlier = seen.get(pin.pattern);
      if (earlier !== undefined && earlier !== pin.host) throw new Error(`--pin ${pin.pattern}=${pin.host}: ${pin.pattern} is already pinned to host ${earlier}`);
      seen.set(pin.pattern, pin.host);
      if (pin.pattern.endsWith('*')) this.prefixes.push({ prefix: pin.pattern.slice(0, -1), host: pin.host });
      else this.exact.set(pin.pattern, pin.host);
    }
    // An exact name wins, then the longest prefix, so `db-*=a` and `db-b*=b` say what they mean.
    this.prefixes.sort((x, y) => y.prefix.length - x.prefix.length);
  }

  get size(): number {
    return this.exact.size + this.prefixes.length;
  }

  /** The host `name` is pinned to, or undefined. */
  hostOf(name: string): string | undefined {
    const exact = this.exact.get(name);
    if (exact !== undefined) return exact;
    return this.prefixes.find((p) => name.startsWith(p.prefix))?.host;
  }
}
