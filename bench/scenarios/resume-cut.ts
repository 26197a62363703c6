/**
 * A resumable stream (spec §4.9) through a TCP relay that goes down for a while in its
 * middle, as a network does: how long after the link is back the first item from after
 * the cut reaches the consumer, and how much of that follows the client's new connection.
 * Beside it, in the same rounds and through the same relay, what a client that starts
 * over without resume pays at least: a fresh connect and its first unary call.
 */
import { TcpProxy } from '../../test/support/tcp-proxy.js';
import { RESUME_GRACE_MS, type CallwireServer } from '../lineup.js';
import type { Bench } from '../scenario.js';
import { ECHO_INPUT } from '../subjects/callwire.js';
import { FRESH_CALL, FRESH_CALL_METRIC, SINCE_CUT_END, SINCE_RECONNECT } from './resume-metrics.js';

/** How long the relay stays down: the network blip of issue 23's tests. */
const CUT_MS = 3000;
const ITEMS = 100_000;
const ITEM_BYTES = 100;
/** Items the consumer has before the relay goes down. */
const CUT_AFTER = 1000;
/** Far longer than a round takes: a stream that never comes back fails the run instead of hanging it. */
const ROUND_MS = 30_000;

interface Resumed {
  /** From the relay taking connections again to the first item after the cut, in the consumer. */
  readonly sinceUp: number;
  /** From the relay taking the client's new connection to that item. */
  readonly sinceReconnect: number;
}

async function cutOnce(server: CallwireServer, relay: TcpProxy): Promise<Resumed> {
  const client = await server.build.client.connect(relay.via(server.addresses.wsUrl), { resume: { graceMs: RESUME_GRACE_MS } });
  let upAt: number | undefined;
  let acceptedAt: number | undefined;
  let firstAt: number | undefined;
  relay.onConnection = () => {
    if (upAt !== undefined) acceptedAt ??= performance.now();
  };
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    let n = 0;
    // Items already received when the relay went down are consumed within the cut, long
    // before it ends: an item seen after `upAt` came over the new connection.
    for await (const _item of client.iterate('bench/stream', { items: ITEMS, itemBytes: ITEM_BYTES }, { signal: AbortSignal.timeout(ROUND_MS) })) {
      if (++n === CUT_AFTER) {
        relay.down();
        timer = setTimeout(() => {
          relay.up();
          upAt = performance.now();
        }, CUT_MS);
      } else if (upAt !== undefined) firstAt ??= performance.now();
    }
    if (n !== ITEMS) throw new Error(`the resumed stream ended after ${n} of ${ITEMS} items`);
  } catch (error) {
    throw new Error(`the stream cut after ${CUT_AFTER} items did not go on to its end (the bench gives a round ${ROUND_MS} ms): ${String(error)}`);
  } finally {
    clearTimeout(timer);
    relay.onConnection = undefined;
    relay.up();
    await client.close();
  }
  if (upAt === undefined || acceptedAt === undefined || firstAt === undefined) throw new Error('the stream ended without going through the cut');
  return { sinceUp: firstAt - upAt, sinceReconnect: firstAt - acceptedAt };
}

async function freshCall(server: CallwireServer, relay: TcpProxy): Promise<number> {
  const t = performance.now();
  const client = await server.build.client.connect(relay.via(server.addresses.wsUrl));
  await client.call('bench/echo', ECHO_INPUT);
  const ms = performance.now() - t;
  await client.close();
  return ms;
}

interface Measured {
  readonly resumed: Resumed[];
  readonly fresh: number[];
}

export async function resumeAfterCut(bench: Bench): Promise<void> {
  const servers = bench.lineup.servers.filter((s) => s.resumable);
  const relays = new Map<CallwireServer, TcpProxy>();
  const measured = new Map<CallwireServer, Measured>(servers.map((s) => [s, { resumed: [], fresh: [] }]));
  try {
    for (const server of servers) relays.set(server, await new TcpProxy().start(Number(new URL(server.addresses.wsUrl).port)));
    // Each build's server in turn within a round, the order alternating, as measure.ts's interleaved does for two builds.
    for (let round = 0; round < bench.options.runs; round++) {
      for (const server of round % 2 ? [...servers].reverse() : servers) {
        const m = measured.get(server)!;
        m.resumed.push(await cutOnce(server, relays.get(server)!));
        m.fresh.push(await freshCall(server, relays.get(server)!));
      }
    }
  } finally {
    await Promise.all([...relays.values()].map((r) => r.stop()));
  }
  const cut = `(${CUT_MS / 1000} s cut, ${ITEM_BYTES} B items)`;
  const metrics = [
    { metric: `${SINCE_CUT_END} ${cut}`, of: (r: Resumed) => r.sinceUp },
    { metric: `${SINCE_RECONNECT} ${cut}`, of: (r: Resumed) => r.sinceReconnect },
  ];
  for (const server of servers) {
    const own = measured.get(server)!;
    const { name, peers } = server.resumable!;
    const others = servers.filter((s) => peers.includes(s.resumable!.name));
    for (const { metric, of } of metrics) {
      const peerValues = Object.fromEntries([[FRESH_CALL, own.fresh], ...others.map((s) => [s.resumable!.name, measured.get(s)!.resumed.map(of)])]);
      bench.record.runs({ group: 'resume', metric, subject: name, unit: 'ms' }, own.resumed.map(of), peerValues);
    }
    const freshPeers = Object.fromEntries(servers.filter((s) => server.peers.includes(s.name)).map((s) => [s.name, measured.get(s)!.fresh]));
    bench.record.runs({ group: 'resume', metric: FRESH_CALL_METRIC, subject: server.name, unit: 'ms' }, own.fresh, freshPeers);
  }
}
