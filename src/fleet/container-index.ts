import type { RoutedContainer } from './beat.js';

/** A container a reference matched, on its host; `exact` when by its whole id or a name. */
export interface Match {
  readonly host: string;
  readonly container: RoutedContainer;
  readonly exact: boolean;
}

interface HostIds {
  /** The host's containers by id, sorted: an id prefix is a binary search, not a scan. */
  readonly sorted: RoutedContainer[];
}

/**
 * Where the fleet's container references lead (docs/fleet.md "Security"): names to the
 * hosts that announce them, kept as each host's table changes, and each host's ids
 * sorted. Finding a reference costs a look-up for its name and a search per host for its
 * id prefix: it grows with the hosts, never with every container of every host.
 */
export class ContainerIndex {
  private readonly byName = new Map<string, Map<string, RoutedContainer>>();
  private readonly byHost = new Map<string, HostIds>();

  /** `host`'s containers are now these (replacing what it held). */
  set(host: string, containers: readonly RoutedContainer[]): void {
    this.remove(host);
    const sorted = [...containers].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    this.byHost.set(host, { sorted });
    for (const c of containers) for (const name of c.names) this.addName(name, host, c);
  }

  /** One container more on `host`. */
  add(host: string, container: RoutedContainer): void {
    const held = this.byHost.get(host);
    if (!held) return this.set(host, [container]);
    const at = lowerBound(held.sorted, container.id);
    held.sorted.splice(at, 0, container);
    for (const name of container.names) this.addName(name, host, container);
  }

  remove(host: string): void {
    const held = this.byHost.get(host);
    if (!held) return;
    this.byHost.delete(host);
    for (const c of held.sorted) {
      for (const name of c.names) {
        const hosts = this.byName.get(name);
        hosts?.delete(host);
        if (hosts?.size === 0) this.byName.delete(name);
      }
    }
  }

  /** Every container named `reference`, or whose id is it or starts with it, on the hosts `include` admits. */
  find(reference: string, include: (host: string) => boolean): Match[] {
    const matches: Match[] = [];
    const named = this.byName.get(reference);
    if (named) for (const [host, container] of named) if (include(host)) matches.push({ host, container, exact: true });
    // Only lowercase hex can begin an engine's id: a name like `web-1` costs one look-up, not a
    // search per host, and no host announcing an id that is not an engine's can make such a
    // name ambiguous (a hostile host's way to deny another host's container its name).
    if (!ID_PREFIX.test(reference)) return matches;
    for (const [host, { sorted }] of this.byHost) {
      if (!include(host)) continue;
      for (let i = lowerBound(sorted, reference); i < sorted.length; i++) {
        const c = sorted[i]!;
        if (!c.id.startsWith(reference)) break;
        if (named?.get(host) === c) continue;
        matches.push({ host, container: c, exact: c.id === reference });
      }
    }
    return matches;
  }

  private addName(name: string, host: string, container: RoutedContainer): void {
    let hosts = this.byName.get(name);
    if (!hosts) this.byName.set(name, (hosts = new Map()));
    // Two containers of one host with one name: the engine refuses that; the first announced keeps it.
    if (!hosts.has(host)) hosts.set(host, container);
  }
}

/** What an engine's container id, or the start of one, looks like. */
const ID_PREFIX = /^[0-9a-f]+$/;

/** The first index of `sorted` whose id is not below `id`. */
function lowerBound(sorted: readonly RoutedContainer[], id: string): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid]!.id < id) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
