import { containerListContract, containerName, infoContract, ownerOf, type TargetResult } from '../contracts/index.js';
import { RpcError } from '../protocol/index.js';
import type { CallOptions, Client } from './client.js';

/** Which running containers a fan-out runs in; both lists must match when both are given (their intersection). */
export interface TargetSelection {
  /** `KEY` (the label is set) or `KEY=VALUE`; a container must carry every one. */
  readonly labels?: readonly string[];
  /** A name, `HOST/NAME`, or a glob with `*` in either part (`a/*`, `web-*`, a `*` host); a container must match one. */
  readonly patterns?: readonly string[];
  /**
   * Take the containers other callers created through callwire too. Without it a label or
   * a glob takes only the caller's own and those callwire did not create, for a label is
   * anyone's to set (docs/security.md "Fan-out"); a name written whole is taken whoever owns it.
   */
  readonly anyOwner?: boolean;
}

/** A running container as a selection sees it: its target name is `HOST/NAME` in a fleet, `NAME` on a single server. */
export interface SelectableContainer {
  readonly host?: string;
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
}

/** What a selection chose: the targets to run, and what it meant that cannot run now. */
export interface Selected {
  /** The targets to run, sorted. */
  readonly targets: string[];
  /** Each listed target's owner: the subject that created it through callwire, null where callwire did not (a name run as written has none). */
  readonly owners: ReadonlyMap<string, string | null>;
  /**
   * Each a target not run (123), with why: a known container of a fleet host that is down,
   * a host that did not answer the list (`HOST/*`), a pattern naming a down host that
   * matched nothing, a name written whole that no running container with the labels has.
   */
  readonly notRun: TargetResult[];
  /** Running containers the selection matched and left out, for other callers created them (`anyOwner` takes them). */
  readonly othersLeftOut: number;
}

/** A row of the container list as a selection reads it; a gateway adds `host`. */
interface ListedRow {
  readonly names: string[];
  readonly state: string;
  readonly labels: Record<string, string>;
  readonly host?: string;
}

/** A fleet host whose containers the list could not show now: down (with the rows its last table had running), or silent. */
interface UnlistedHost {
  readonly host: string;
  readonly error: string;
  readonly containers?: ListedRow[];
}

export function targetOf(container: SelectableContainer): string {
  return container.host === undefined ? container.name : `${container.host}/${container.name}`;
}

/** `*` matches any run of characters, empty included; everything else is itself. */
export function globMatches(glob: string, text: string): boolean {
  const parts = glob.split('*');
  if (parts.length === 1) return glob === text;
  const first = parts[0] ?? '';
  const last = parts[parts.length - 1] ?? '';
  if (text.length < first.length + last.length || !text.startsWith(first) || !text.endsWith(last)) return false;
  let at = first.length;
  const end = text.length - last.length;
  for (const middle of parts.slice(1, -1)) {
    const found = text.indexOf(middle, at);
    if (found < 0 || found + middle.length > end) return false;
    at = found + middle.length;
  }
  return true;
}

/** A pattern without `/` matches the name on any host; `HOST/NAME` matches both parts, and only a fleet's rows have a host. */
export function patternMatches(pattern: string, container: SelectableContainer): boolean {
  const slash = pattern.indexOf('/');
  if (slash < 0) return globMatches(pattern, container.name);
  return container.host !== undefined && globMatches(pattern.slice(0, slash), container.host) && globMatches(pattern.slice(slash + 1), container.name);
}

export function labelMatches(selector: string, labels: Readonly<Record<string, string>>): boolean {
  const eq = selector.indexOf('=');
  if (eq < 0) return Object.hasOwn(labels, selector);
  const key = selector.slice(0, eq);
  return Object.hasOwn(labels, key) && labels[key] === selector.slice(eq + 1);
}

/** Throws INVALID_INPUT for a selection that names nothing, an empty label key, or a pattern that is not NAME or HOST/NAME. */
export function checkSelection(selection: TargetSelection): void {
  const labels = selection.labels ?? [];
  const patterns = selection.patterns ?? [];
  if (labels.length === 0 && patterns.length === 0) throw new RpcError('INVALID_INPUT', "a selection needs a label or a pattern ('*' selects every running container)");
  for (const label of labels) if (label.length === 0 || label.startsWith('=')) throw new RpcError('INVALID_INPUT', `label "${label}": KEY or KEY=VALUE`);
  for (const pattern of patterns) {
    const parts = pattern.split('/');
    if (parts.length > 2 || parts.some((part) => part.length === 0)) throw new RpcError('INVALID_INPUT', `target "${pattern}": NAME or HOST/NAME, each part a name or a glob with *`);
  }
}

export function selectionMatches(selection: TargetSelection, container: SelectableContainer): boolean {
  const patterns = selection.patterns ?? [];
  return (selection.labels ?? []).every((label) => labelMatches(label, container.labels)) && (patterns.length === 0 || patterns.some((p) => patternMatches(p, container)));
}

/** Whether a host's containers could match: a host that did not answer a list matters only then. */
export function selectionMayReachHost(selection: TargetSelection, host: string): boolean {
  const patterns = selection.patterns ?? [];
  return patterns.length === 0 || patterns.some((p) => !p.includes('/') || globMatches(p.slice(0, p.indexOf('/')), host));
}

/**
 * What `selection` chooses among the running containers (docs/cli.md "Many containers"):
 * the targets, sorted, each with its owner; what it meant that cannot run; and how many
 * containers it left out for other callers created them (docs/security.md "Fan-out").
 */
export async function selectTargetsFrom(client: Client, selection: TargetSelection, options: CallOptions = {}): Promise<Selected> {
  checkSelection(selection);
  const [listed, info] = await Promise.all([
    client.call(containerListContract, { all: false, owned_only: false }, options) as Promise<{ containers: ListedRow[]; unavailable?: UnlistedHost[] }>,
    selection.anyOwner ? undefined : client.call(infoContract, null, options),
  ]);
  const me = info?.identity?.subject;
  const patterns = selection.patterns ?? [];
  /** Each target, with its owner: undefined for a name run as written, which no row showed. */
  const targets = new Map<string, string | null | undefined>();
  const notRun = new Map<string, TargetResult>();
  /** The patterns that matched some container, running or known on a down host. */
  const met = new Set<string>();
  let othersLeftOut = 0;
  /** Whether the container is one to take; a container of another caller's is counted, not taken. */
  const takes = (container: SelectableContainer): boolean => {
    if (!selectionMatches(selection, container)) return false;
    for (const pattern of patterns) if (patternMatches(pattern, container)) met.add(pattern);
    const owner = ownerOf(container.labels);
    if (selection.anyOwner || owner === null || owner === me || patterns.some((p) => isWholeName(p) && patternMatches(p, container))) return true;
    othersLeftOut++;
    return false;
  };
  for (const row of listed.containers) {
    const container = runningContainer(row);
    if (container && takes(container)) targets.set(targetOf(container), ownerOf(container.labels));
  }
  for (const unlisted of listed.unavailable ?? []) {
    if (!selectionMayReachHost(selection, unlisted.host)) continue;
    if (unlisted.containers === undefined) {
      const target = `${unlisted.host}/*`;
      notRun.set(target, notRunResult(target, 'UNAVAILABLE', `host ${unlisted.host} did not answer the list: ${unlisted.error}`));
      continue;
    }
    // A down host: what it last reported running, as targets that cannot run.
    for (const row of unlisted.containers) {
      const container = runningContainer({ ...row, host: unlisted.host });
      if (container && takes(container)) notRun.set(targetOf(container), notRunResult(targetOf(container), 'UNAVAILABLE', unlisted.error));
    }
    // A pattern that names the host and matched nothing there: the host being down is why.
    for (const pattern of patterns) {
      if (!met.has(pattern) && pattern.slice(0, pattern.indexOf('/')) === unlisted.host) notRun.set(pattern, notRunResult(pattern, 'UNAVAILABLE', unlisted.error));
    }
  }
  for (const name of patterns.filter((p) => isWholeName(p) && !met.has(p) && !notRun.has(p))) {
    // A name the caller wrote whole that no running container showed runs as written: the server says why it cannot.
    if (!isPrintablePattern(name)) notRun.set(name, notRunResult(name, 'INVALID_INPUT', 'not a container name, nor HOST/NAME'));
    else if ((selection.labels ?? []).length > 0) notRun.set(name, notRunResult(name, 'CONTAINER_NOT_FOUND', `no running container of that name has the label${selection.labels!.length > 1 ? 's' : ''} ${selection.labels!.join(', ')}`));
    else targets.set(name, undefined);
  }
  const sorted = [...targets.keys()].sort();
  const owners = new Map<string, string | null>();
  for (const target of sorted) {
    const owner = targets.get(target);
    if (owner !== undefined) owners.set(target, owner);
  }
  return { targets: sorted, owners, notRun: [...notRun.values()].sort((a, b) => (a.target < b.target ? -1 : a.target > b.target ? 1 : 0)), othersLeftOut };
}

/** A pattern without `*`: a name (or HOST/NAME) the caller chose, not a description. */
function isWholeName(pattern: string): boolean {
  return !pattern.includes('*');
}

/** A whole name that can be printed as a target and sent as a container reference: each of its parts of the name grammar. */
function isPrintablePattern(pattern: string): boolean {
  const [first, second] = pattern.split('/') as [string, string | undefined];
  return second === undefined ? isPrintableTarget(first, undefined) : isPrintableTarget(second, first);
}

/** The row as a selectable container, when it runs and its names can be printed. */
function runningContainer(row: ListedRow): SelectableContainer | undefined {
  const name = row.names[0]?.replace(/^\//, '');
  if (name === undefined || row.state !== 'running' || !isPrintableTarget(name, row.host)) return undefined;
  return { name, labels: row.labels, ...(row.host === undefined ? {} : { host: row.host }) };
}

function notRunResult(target: string, code: string, message: string): TargetResult {
  return { target, error: { code, message }, stdoutBytes: 0, stderrBytes: 0 };
}

/** A target is printed as a prefix: a row that names its container or host otherwise (a newline, an escape) is not selected. */
export function isPrintableTarget(name: string, host: string | undefined): boolean {
  // A fleet's host ids are of the container name's grammar too (docs/fleet.md), and the gateway sets them itself.
  return containerName.safeParse(name).success && (host === undefined || containerName.safeParse(host).success);
}

/** The running containers a selection matches, as exec targets: `HOST/NAME` in a fleet (rows carry `host`), `NAME` otherwise. */
export async function selectTargets(client: Client, selection: TargetSelection, options: CallOptions = {}): Promise<string[]> {
  return (await selectTargetsFrom(client, selection, options)).targets;
}
