import { z } from 'zod';
import type { CallOptions } from '../client/index.js';
import { containerListContract, type EveryHost, type PlacedContract } from '../contracts/index.js';
import { assertOperationShape, holdsScope, deriveContext, type CallContext, type Identity, type Operation, type ResumeSeam } from '../dispatcher/index.js';
import { RpcError } from '../protocol/index.js';
import { releasing, type FleetClients, type Lease } from './fleet-clients.js';
import { relayStream } from './fleet-resume-seam.js';
import type { HostTable } from './host-table.js';
import { HOST_ID_PATTERN } from './subjects.js';

const hostId = z.string().regex(HOST_ID_PATTERN, 'must be a host id: [a-z0-9][a-z0-9_-]{0,62}').describe('the fleet host to run it on');

/** `HOST/NAME`, or a container reference (the agent checks it against the engine's grammar). */
const fleetContainerReference = z
  .string()
  .regex(/^(?:[a-z0-9][a-z0-9_-]{0,62}\/)?[a-zA-Z0-9][a-zA-Z0-9_.-]*$/, 'must be a container id, id prefix or name, or HOST/NAME')
  .describe('a container id, id prefix or name unique in the fleet, or HOST/NAME');

/** Hosts this identity may reach: all of them, unless it holds `host:` scopes, which name them (`host:*` all). */
export function mayReach(identity: Identity | null, host: string): boolean {
  if (identity === null || !identity.scopes.some((s) => s.startsWith('host:'))) return true;
  return holdsScope(identity, `host:${host}`);
}

export interface FleetRouting {
  readonly hosts: HostTable;
  readonly clients: FleetClients;
  /** Where the gateway's streams resume, at their agents (§4.9); absent: they are not resumable here. */
  readonly seam?: ResumeSeam;
  /** How long a merged list waits for each host; a later one is listed in `unavailable` (default LIST_HOST_DEADLINE_MS). */
  readonly listDeadlineMs?: number;
}

/** A host that beats but does not answer a list within this long is left out of the merged answer, not waited for. */
export const LIST_HOST_DEADLINE_MS = 5000;

/**
 * The gateway's Docker operations (docs/fleet.md): the agents' contracts, each handler a
 * proxy that runs the call where its contract's `placement` says, calling the agent as
 * the caller. A container is found by its id or name when one host holds it, or as
 * `HOST/NAME`; a list merges every host; the others name their `host` when the fleet
 * has more than one.
 */
export function fleetOperations(contracts: readonly PlacedContract[], routing: FleetRouting): Operation[] {
  return contracts.map((contract) => {
    switch (contract.placement.kind) {
      case 'container':
        return containerRouted(contract as Placed<'container'>, routing);
      case 'host':
      case 'new-container':
        return hostRouted(contract as Placed<'host'> | Placed<'new-container'>, routing);
      case 'every-host':
        return merged(contract, contract.placement, routing);
    }
  });
}

type Placed<K extends PlacedContract['placement']['kind']> = Extract<PlacedContract, { readonly placement: { readonly kind: K } }>;

/** The contract with the gateway's input, output and handler, checked as a new operation is; its streams resume at the agent (§4.9). */
function reshaped(op: Operation, routing: FleetRouting): Operation {
  assertOperationShape(op);
  return op.kind === 'subscription' && routing.seam ? { ...op, resumeSeam: routing.seam } : op;
}

function callOptions(ctx: CallContext): CallOptions {
  return {
    signal: ctx.signal,
    ...(ctx.deadlineAt === undefined ? {} : { deadlineMs: Math.max(1, ctx.deadlineAt - Date.now()) }),
    ...(ctx.input ? { input: ctx.input } : {}),
  };
}

/** The host's client for this caller, held until released, or why the caller cannot reach that host. */
export function leaseFor(host: string, ctx: Pick<CallContext, 'identity'>, routing: FleetRouting): Lease {
  const why = routing.hosts.unreachable(host, (h) => mayReach(ctx.identity, h));
  if (why) throw why;
  return routing.clients.lease(host, ctx.identity);
}

function forward(op: PlacedContract, host: string, input: unknown, ctx: CallContext, routing: FleetRouting): unknown {
  const lease = leaseFor(host, ctx, routing);
  // The audit line says which host ran the call, whatever the caller named.
  ctx.routedTo?.(host);
  // A resume at this gateway is held to the host the call runs on, as its start was (RSM-9).
  ctx.requireOnResume?.((identity) => (mayReach(identity, host) ? undefined : RpcError.of('FORBIDDEN', `missing scope: host:${host}`)));
  if (op.kind !== 'subscription') return lease.client.call(op.name, input, callOptions(ctx)).finally(lease.release);
  return releasing(relayStream(lease.client, host, op.name, input, ctx, callOptions(ctx)), lease.release);
}


function containerRouted(op: Placed<'container'>, routing: FleetRouting): Operation {
  const input = op.input.extend({ containerId: fleetContainerReference });
  const handler = (given: Record<string, unknown>, ctx: CallContext): unknown => {
    const route = routing.hosts.route(String(given['containerId']), (host) => mayReach(ctx.identity, host));
    if (route instanceof RpcError) throw route;
    return forward(op, route.host, { ...given, containerId: route.ref }, ctx, routing);
  };
  return reshaped({ ...op, input, handler } as Operation, routing);
}

/** The one up host the caller may reach, or the one it named; more than one unnamed is INVALID_INPUT. */
function chooseHost(named: string | undefined, ctx: CallContext, routing: FleetRouting): string {
  if (named !== undefined) return named;
  const reachable = routing.hosts.upHosts().filter((h) => mayReach(ctx.identity, h));
  if (reachable.length === 1 && reachable[0] !== undefined) return reachable[0];
  if (reachable.length === 0) throw new RpcError('UNAVAILABLE', 'no host of the fleet is up');
  throw RpcError.of('INVALID_INPUT', `name the host to run it on: one of ${reachable.join(', ')}`);
}

function hostRouted(op: Placed<'host'> | Placed<'new-container'>, routing: FleetRouting): Operation {
  const input = op.input.extend({ host: hostId.optional() });
  const handler = (given: Record<string, unknown>, ctx: CallContext): unknown => {
    const { host, ...rest } = given;
    const chosen = chooseHost(host as string | undefined, ctx, routing);
    const result = forward(op, chosen, rest, ctx, routing);
    if (op.placement.kind === 'new-container') return learnCreated(result as Promise<{ containerId: string }>, chosen, rest['name'], routing);
    return result;
  };
  // A new container is answered with the host it was created on, which the caller may not have named.
  const output = op.placement.kind === 'new-container' ? (op as Placed<'new-container'>).output.extend({ host: z.string() }) : op.output;
  return reshaped({ ...op, input, output, handler } as Operation, routing);
}

async function learnCreated(result: Promise<{ containerId: string }>, host: string, name: unknown, routing: FleetRouting): Promise<{ containerId: string; host: string }> {
  const created = await result;
  routing.hosts.learn(host, { id: created.containerId, names: typeof name === 'string' ? [name] : [] });
  return { ...created, host };
}

/**
 * A list over every host the caller may reach, each row with its `host`; hosts that did not
 * answer are named, and so are those that are down, with the rows of running containers
 * their last table had when the list is of running containers (a fan-out reports those as
 * not run: docs/security.md "Fan-out").
 */
function merged(op: PlacedContract, { rows: key, row, filter }: EveryHost, routing: FleetRouting): Operation {
  const output = z.object({
    [key]: z.array(row.extend({ host: z.string() })),
    unavailable: z
      .array(z.object({ host: z.string(), error: z.string(), [key]: z.array(row).optional().describe("a down host's running containers as its last table had them") }))
      .describe('hosts that did not answer or are down; their rows are missing'),
  });
  const input = (filter ?? z.strictObject({})).extend({ host: hostId.optional() }).nullable();
  const handler = async (given: Record<string, unknown> | null, ctx: CallContext): Promise<unknown> => {
    const { host, ...rest } = given ?? {};
    const hosts = host !== undefined ? [host as string] : routing.hosts.upHosts().filter((h) => mayReach(ctx.identity, h));
    const forwarded = filter ? rest : null;
    // A host named alone answers in the call's own time; merged, each host in its deadline, so one that never answers stalls no one.
    const deadlineMs = host === undefined ? (routing.listDeadlineMs ?? LIST_HOST_DEADLINE_MS) : undefined;
    const fromTable = (h: string): unknown[] | undefined => (listsFromTable(op, rest) && !routing.hosts.unreachable(h, (r) => mayReach(ctx.identity, r)) ? routing.hosts.runningRows(h) : undefined);
    const answers = await Promise.allSettled(
      hosts.map(async (h) => ({ host: h, rows: fromTable(h) ?? ((await answerWithin(deadlineMs, h, ctx, (hostCtx) => forward(op, h, forwarded, hostCtx, routing) as Promise<unknown>)) as Record<string, unknown[]>)[key] ?? [] })),
    );
    const rows: unknown[] = [];
    const unavailable: { host: string; error: string }[] = [];
    answers.forEach((answer, i) => {
      if (answer.status === 'fulfilled') for (const r of answer.value.rows) rows.push({ ...(r as object), host: answer.value.host });
      else unavailable.push({ host: hosts[i] ?? '', error: answer.reason instanceof Error ? answer.reason.message : String(answer.reason) });
    });
    if (host !== undefined && unavailable.length > 0) throw answers[0]?.status === 'rejected' ? answers[0].reason : new RpcError('UNAVAILABLE', unavailable[0]?.error ?? '');
    if (host === undefined) unavailable.push(...downHosts(routing, ctx, listsFromTable(op, rest) ? key : undefined));
    return { [key]: rows, unavailable };
  };
  return reshaped({ ...op, input, output, handler } as Operation, routing);
}

/** The down hosts the caller may reach, each with why, and under `key` its last table's running rows when the gateway has them. */
function downHosts(routing: FleetRouting, ctx: CallContext, key: string | undefined): { host: string; error: string }[] {
  const reachable = (h: string): boolean => mayReach(ctx.identity, h);
  return routing.hosts
    .states()
    .filter((state) => state.state === 'down' && reachable(state.id))
    .map(({ id }): { host: string; error: string } => {
      const rows = key === undefined ? undefined : routing.hosts.lastRunningRows(id);
      return { host: id, error: routing.hosts.unreachable(id, reachable)?.message ?? `host ${id} is down`, ...(rows === undefined || key === undefined ? {} : { [key]: rows }) };
    });
}

/**
 * Whether the gateway answers this list from its table where a host's table is current
 * (docs/fleet.md "Limits"): the running containers, not only the caller's own. A fan-out
 * selects its targets so without a call per host.
 */
function listsFromTable(op: PlacedContract, filter: Record<string, unknown>): boolean {
  return op.name === containerListContract.name && filter['all'] === false && filter['owned_only'] !== true;
}

/** `call` with the caller's context, ended and refused as UNAVAILABLE once `deadlineMs` pass (none: no deadline of its own). */
async function answerWithin<T>(deadlineMs: number | undefined, host: string, ctx: CallContext, call: (ctx: CallContext) => Promise<T>): Promise<T> {
  if (deadlineMs === undefined) return call(ctx);
  const late = new AbortController();
  const timer = setTimeout(() => late.abort(new RpcError('UNAVAILABLE', `host ${host} did not answer within ${deadlineMs} ms`)), deadlineMs);
  const hostCtx = deriveContext(ctx, { signal: AbortSignal.any([ctx.signal, late.signal]) });
  const refused = new Promise<never>((_, reject) => late.signal.addEventListener('abort', () => reject(late.signal.reason as Error), { once: true }));
  try {
    // The race, not the abort alone: an answer that never comes never settles the call either.
    return await Promise.race([call(hostCtx), refused]);
  } finally {
    clearTimeout(timer);
  }
}
