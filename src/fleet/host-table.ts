import { RpcError } from '../protocol/index.js';
import { BEAT_MS, DOWN_AFTER_BEATS, type Beat, type RoutedContainer } from './beat.js';
import { ContainerIndex } from './container-index.js';
import { describeAgent, type AgentSelf } from './host-claim.js';
import { NamePins } from './name-pins.js';

export interface HostState {
  readonly id: string;
  readonly state: 'up' | 'down';
  readonly engine: 'up' | 'down';
  readonly containers: number;
  /** Milliseconds since its last heartbeat. */
  readonly lastSeenMs: number;
}

/** How many of an ambiguous reference's candidates an answer names. */
const MAX_CANDIDATES_NAMED = 20;
/** How long a down host's names stay reserved for it before the gateway forgets the host (`--fleet-forget-after`). */
export const FORGET_DOWN_HOST_MS = 24 * 60 * 60 * 1000;
/** How often a gateway says again that two agents beat as one host. */
const TWO_AGENTS_LOG_MS = 60_000;
/** A bound on the (host, name) pairs whose ignored announcement was logged: each is logged once. */
const MAX_IGNORED_LOGGED = 1000;

interface HostEntry {
  startedAt: number;
  /** Who beats as this host, as its beats say; and who did before its last restart. */
  agent: Partial<AgentSelf>;
  before?: Partial<AgentSelf>;
  version: number;
  /** The table as of `tableVersion`; behind `version` until the agent sends it. */
  tableVersion: number;
  /** The newest version whose table the agent said it withholds (its engine unlisted, or the table too large): not asked for. */
  withheldVersion: number;
  containers: RoutedContainer[];
  engine: 'up' | 'down';
  lastBeat: number;
  up: boolean;
  askedAt: number;
  /** Every container of `containers` carries its list row and its labels: the gateway can list them itself. */
  listable: boolean;
}

/** A row of `docker/container/list` as the gateway's table holds it. */
export interface ListedRow {
  readonly id: string;
  readonly names: string[];
  readonly image: string;
  readonly state: string;
  readonly status: string;
  readonly labels: Record<string, string>;
  readonly created: number;
}

/** The agent a beat names. */
const agentOf = (beat: Beat): Partial<AgentSelf> => ({ startedAt: beat.startedAt, ...(beat.pid === undefined ? {} : { pid: beat.pid }), ...(beat.hostname === undefined ? {} : { hostname: beat.hostname }) });

/** Whether the table holds the container's list row, labels and all. */
const hasRow = (c: RoutedContainer): boolean => c.labels !== undefined && c.labelsOmitted !== true && c.state !== undefined && c.image !== undefined && c.status !== undefined && c.created !== undefined;

/** The running ones of a table's containers, as list rows. */
function runningRowsOf(containers: readonly RoutedContainer[]): ListedRow[] {
  const rows: ListedRow[] = [];
  for (const c of containers) {
    if (c.state !== 'running') continue;
    rows.push({ id: c.id, names: c.names.map((n) => `/${n}`), image: c.image ?? '', state: c.state, status: c.status ?? '', labels: c.labels ?? {}, created: c.created ?? 0 });
  }
  return rows;
}

/** Where a caller's container reference leads: a host, and the reference as that host's engine knows it. */
export interface Route {
  readonly host: string;
  readonly ref: string;
}

export interface HostTableEvents {
  /** A host fell silent, or its agent restarted: what was running through it is gone. */
  readonly gone: (host: string, error: RpcError) => void;
  /** A host whose table is behind: ask its agent for it. */
  readonly ask: (host: string) => void;
  /** A host announced a name pinned to another host: the name is left out of its table (told once per host and name). */
  readonly ignored?: (host: string, name: string, pinnedTo: string) => void;
  /** Two agents beat as one host (its restarts go back and forth): every call to it fails until one stops (told once a minute). */
  readonly twoAgents?: (host: string, agents: [string, string]) => void;
}

export interface HostTableOptions {
  /** Names the operator pinned to hosts: they resolve to that host only. */
  readonly pins?: NamePins;
  /** A host down this long is forgotten, and its names with it (default 24 h). */
  readonly forgetAfterMs?: number;
}

/**
 * The gateway's view of the fleet, from the agents' heartbeats: which hosts are up and
 * which containers each holds, so that a call naming a container goes to its host.
 * A host's NATS credentials let it announce any name, so a name never moves to another
 * host by announcement alone (docs/fleet.md "Security"): a down host keeps its names
 * reserved until it is forgotten, a restarted one until its agent's first table replaces
 * them, and a pinned name resolves to its pinned host only.
 */
export class HostTable {
  private readonly hosts = new Map<string, HostEntry>();
  private readonly index = new ContainerIndex();
  private readonly timer: ReturnType<typeof setInterval>;
  private readonly pins: NamePins;
  private readonly forgetAfterMs: number;
  private readonly ignoredLogged = new Set<string>();
  private readonly twoAgentsLogged = new Map<string, number>();
  /** Why the gateway cannot hear beats now (their connection is down, or it is behind on them): silence says nothing of a host. */
  private readonly deafFor = new Set<string>();

  constructor(
    private readonly events: HostTableEvents,
    options: HostTableOptions = {},
  ) {
    this.pins = options.pins ?? new NamePins();
    this.forgetAfterMs = options.forgetAfterMs ?? FORGET_DOWN_HOST_MS;
    this.timer = setInterval(() => this.sweep(), BEAT_MS / 2);
    this.timer.unref();
  }

  close(): void {
    clearInterval(this.timer);
  }

  heard(host: string, beat: Beat, now = Date.now()): void {
    let entry = this.hosts.get(host);
    if (entry && entry.startedAt !== beat.startedAt) {
      const agent = agentOf(beat);
      // An agent that restarted does not come back as the one before it: this is a second agent of the host id.
      if (entry.before?.startedAt === beat.startedAt && now - (this.twoAgentsLogged.get(host) ?? 0) > TWO_AGENTS_LOG_MS) {
        this.twoAgentsLogged.set(host, now);
        this.events.twoAgents?.(host, [describeAgent(entry.agent), describeAgent(agent)]);
      }
      entry.before = entry.agent;
      entry.agent = agent;
      this.events.gone(host, new RpcError('UNAVAILABLE', `host ${host} restarted: its calls are gone`));
      // Its calls are gone, not its names: they stay reserved under the table it had until the new agent's first
      // table replaces them (one that cannot list its engine yet, after a reboot say, has not found it empty).
      Object.assign(entry, { startedAt: beat.startedAt, version: beat.version, tableVersion: -1, withheldVersion: -1, askedAt: 0, listable: false });
    }
    if (!entry) {
      entry = { startedAt: beat.startedAt, agent: agentOf(beat), version: beat.version, tableVersion: -1, withheldVersion: -1, containers: [], engine: beat.engine, lastBeat: now, up: true, askedAt: 0, listable: false };
      this.hosts.set(host, entry);
    }
    entry.up = true;
    entry.lastBeat = now;
    entry.engine = beat.engine;
    entry.version = Math.max(entry.version, beat.version);
    // A table older than the one held (an answer to an ask overtaken by a later beat's table) changes nothing.
    if (beat.containers && beat.version >= entry.tableVersion) {
      entry.containers = this.pins.size === 0 ? beat.containers : beat.containers.map((c) => this.unpinned(host, c));
      entry.tableVersion = beat.version;
      entry.listable = entry.containers.every(hasRow);
      this.index.set(host, entry.containers);
    }
    if (beat.withheld !== undefined) entry.withheldVersion = Math.max(entry.withheldVersion, beat.version);
    if (entry.tableVersion < entry.version && entry.withheldVersion < entry.version && now - entry.askedAt > BEAT_MS) {
      entry.askedAt = now;
      this.events.ask(host);
    }
  }

  /** A container the gateway just created through `host`: routable before its next heartbeat says so. */
  learn(host: string, container: RoutedContainer): void {
    const entry = this.hosts.get(host);
    if (!entry || entry.containers.some((c) => c.id === container.id)) return;
    const learnt = this.unpinned(host, container);
    entry.containers.push(learnt);
    entry.listable &&= hasRow(learnt);
    this.index.add(host, learnt);
  }

  /**
   * `host`'s running containers as its list rows, from its table, when the table is
   * current (its last beat's version) and has every container's row; else undefined:
   * ask the host.
   */
  runningRows(host: string): ListedRow[] | undefined {
    const entry = this.hosts.get(host);
    if (!entry?.up || !entry.listable || entry.tableVersion !== entry.version) return undefined;
    return runningRowsOf(entry.containers);
  }

  /**
   * A down host's running containers as its last table had them (its names stay reserved
   * for it until it is forgotten): what a fan-out meant there, to report as not run.
   * Undefined for a host that is up, unknown, or whose table lacks the rows.
   */
  lastRunningRows(host: string): ListedRow[] | undefined {
    const entry = this.hosts.get(host);
    if (!entry || entry.up || !entry.listable) return undefined;
    return runningRowsOf(entry.containers);
  }

  /** The container without the names pinned to another host: what `host` may not claim. */
  private unpinned(host: string, container: RoutedContainer): RoutedContainer {
    const names = container.names.filter((name) => {
      const pinnedTo = this.pins.hostOf(name);
      if (pinnedTo === undefined || pinnedTo === host) return true;
      const key = `${host}\n${name}`;
      if (!this.ignoredLogged.has(key) && this.ignoredLogged.size < MAX_IGNORED_LOGGED) {
        this.ignoredLogged.add(key);
        this.events.ignored?.(host, name, pinnedTo);
      }
      return false;
    });
    return names.length === container.names.length ? container : { ...container, names };
  }

  /**
   * The gateway stops or starts hearing beats, for `reason` (their NATS connection dropped,
   * or it is behind on reading them): no host is found silent meanwhile, and each has its
   * full wait again from when the gateway hears again.
   */
  deaf(reason: string, deaf: boolean, now = Date.now()): void {
    if (deaf) return void this.deafFor.add(reason);
    if (!this.deafFor.delete(reason) || this.deafFor.size > 0) return;
    for (const entry of this.hosts.values()) if (entry.up) entry.lastBeat = Math.max(entry.lastBeat, now);
  }

  isUp(host: string): boolean {
    return this.hosts.get(host)?.up === true;
  }

  upHosts(): string[] {
    return [...this.hosts].filter(([, e]) => e.up).map(([id]) => id).sort();
  }

  states(now = Date.now()): HostState[] {
    return [...this.hosts]
      .map(([id, e]) => ({ id, state: e.up ? ('up' as const) : ('down' as const), engine: e.engine, containers: e.containers.length, lastSeenMs: now - e.lastBeat }))
      .sort((a, b) => a.id.localeCompare(b.id));
  }

  /** Why `host` cannot take a call now, or undefined when it can. */
  unreachable(host: string, reachable: (host: string) => boolean = () => true): RpcError | undefined {
    // Named before it is looked up: a host the caller may not reach is refused alike whether it exists, is up or is down.
    if (!reachable(host)) return RpcError.of('FORBIDDEN', `missing scope: host:${host}`);
    const entry = this.hosts.get(host);
    if (!entry) return new RpcError('NOT_FOUND', `no host ${host} in the fleet (hosts: ${this.upHosts().filter(reachable).join(', ') || 'none'})`);
    if (!entry.up) return new RpcError('UNAVAILABLE', `host ${host} is down: no heartbeat for ${Math.round((Date.now() - entry.lastBeat) / 1000)} s`);
    return undefined;
  }

  /**
   * `HOST/NAME`; a pinned name to its host; or an id, id prefix or name that exactly one host
   * the caller may reach holds, that host up. An ambiguous one is INVALID_INPUT naming the
   * candidates; none is CONTAINER_NOT_FOUND. A down host's containers stay candidates until
   * the host is forgotten: another host announcing the same name makes it ambiguous, never
   * its own, and the down host's alone is UNAVAILABLE naming it.
   */
  route(reference: string, reachable: (host: string) => boolean = () => true): Route | RpcError {
    const slash = reference.indexOf('/');
    if (slash >= 0) {
      const host = reference.slice(0, slash);
      const ref = reference.slice(slash + 1);
      return this.unreachable(host, reachable) ?? { host, ref };
    }
    const pinned = this.pins.hostOf(reference);
    if (pinned !== undefined) {
      // What any host announces does not matter: to the pinned host, or to none for a caller who may not reach it.
      if (!reachable(pinned)) return new RpcError('CONTAINER_NOT_FOUND', `no such container in the fleet: ${reference}`, { details: { containerId: reference } });
      if (!this.hosts.has(pinned)) return new RpcError('UNAVAILABLE', `container ${reference} is pinned to host ${pinned}, which this gateway has not heard from`);
      return this.held(reference, pinned, reachable) ?? { host: pinned, ref: reference };
    }
    // A host the caller may not reach neither resolves its name nor says what it holds. A down one still holds its names.
    const candidates = this.index.find(reference, reachable).map(({ host, container: c, exact }) => ({ host, name: c.names[0] ?? c.id.slice(0, 12), exact }));
    // An exact id or name wins over prefixes of other ids on its own host, as the engine resolves it; across
    // hosts it does not: another host (a hostile agent, say) naming a container after this one's id prefix
    // would otherwise take the calls meant for it.
    const exact = candidates.filter((c) => c.exact);
    const oneHost = candidates.every((c) => c.host === candidates[0]?.host);
    const chosen = oneHost && exact.length > 0 ? exact : candidates;
    if (chosen.length === 1 && chosen[0]) return this.held(reference, chosen[0].host, reachable) ?? { host: chosen[0].host, ref: reference };
    if (chosen.length === 0) return new RpcError('CONTAINER_NOT_FOUND', `no such container in the fleet: ${reference}`, { details: { containerId: reference } });
    // A short prefix may match thousands of containers: the answer names a bounded few, and says how many there are.
    const names = chosen.map((c) => `${c.host}/${c.name}`).sort().slice(0, MAX_CANDIDATES_NAMED);
    const more = chosen.length > names.length ? ` (and ${chosen.length - names.length} more)` : '';
    return new RpcError('INVALID_INPUT', `container ${reference} is ambiguous in the fleet: name it as one of ${names.join(', ')}${more}`, { details: { candidates: names, matches: chosen.length } });
  }

  /** Why `reference`, which `host` holds, cannot be called there now: a down host keeps it. */
  private held(reference: string, host: string, reachable: (host: string) => boolean): RpcError | undefined {
    const why = this.unreachable(host, reachable);
    if (why?.code !== 'UNAVAILABLE') return why;
    return new RpcError('UNAVAILABLE', `${why.message}, and it holds ${reference}: a down host's names stay reserved for it (another host's container is named HOST/NAME)`);
  }

  private sweep(now = Date.now()): void {
    if (this.deafFor.size > 0) return;
    for (const [host, entry] of this.hosts) {
      if (!entry.up && now - entry.lastBeat > this.forgetAfterMs) {
        this.hosts.delete(host);
        this.index.remove(host);
        this.twoAgentsLogged.delete(host);
        continue;
      }
      if (entry.up && now - entry.lastBeat > BEAT_MS * DOWN_AFTER_BEATS) {
        entry.up = false;
        this.events.gone(host, new RpcError('UNAVAILABLE', `host ${host} stopped answering: no heartbeat for ${Math.round((now - entry.lastBeat) / 1000)} s`));
      }
    }
  }
}
