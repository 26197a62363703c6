import { containerListContract, containerName } from '../contracts/index.js';
import { RpcError } from '../protocol/index.js';
import type { CallOptions, Client } from './client.js';

/** Which running containers a fan-out runs in; both lists must match when both are given (their intersection). */
export interface TargetSelection {
  /** `KEY` (the label is set) or `KEY=VALUE`; a container must carry every one. */
  readonly labels?: readonly string[];
  /** A name, `HOST/NAME`, or a glob with `*` in either part (`a/*`, `web-*`, a `*` host); a container must match one. */
  readonly patterns?: readonly string[];
}

/** A running container as a selection sees it: its target name is `HOST/NAME` in a fleet, `NAME` on a single server. */
export interface SelectableContainer {
  readonly host?: string;
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
}

/** The targets, and the fleet hosts whose containers could not be listed (the gateway's `unavailable`). */
export interface Selected {
  readonly targets: string[];
  readonly unavailable: readonly { readonly host: string; readonly error: string }[];
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

/** The matching running containers, sorted by target, with the hosts that did not answer and could hold some. */
export async function selectTargetsFrom(client: Client, selection: TargetSelection, options: CallOptions = {}): Promise<Selected> {
  checkSelection(selection);
  const listed = (await client.call(containerListContract, { all: false, owned_only: false }, options)) as {
    containers: { names: string[]; state: string; labels: Record<string, string>; host?: string }[];
    unavailable?: { host: string; error: string }[];
  };
  const targets = new Set<string>();
  for (const row of listed.containers) {
    const name = row.names[0]?.replace(/^\//, '');
    if (name === undefined || row.state !== 'running' || !isPrintableTarget(name, row.host)) continue;
    const container: SelectableContainer = { name, labels: row.labels, ...(row.host === undefined ? {} : { host: row.host }) };
    if (selectionMatches(selection, container)) targets.add(targetOf(container));
  }
  const unavailable = (listed.unavailable ?? []).filter((u) => selectionMayReachHost(selection, u.host));
  return { targets: [...targets].sort(), unavailable };
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
