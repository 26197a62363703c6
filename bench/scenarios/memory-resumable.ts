/**
 * The server's memory per resumable call (spec §4.9) whose connection was lost: 1,000
 * calls on one connection through a TCP relay, each with one item delivered (its caller
 * acknowledges on arrival, RSM-3), measured attached, then again once the relay has gone
 * down and every call waits for its caller; and the bytes their replay logs hold
 * (`services/stats`).
 */
import { TcpProxy } from '../../test/support/tcp-proxy.js';
import { RESUME_GRACE_MS, type CallwireServer } from '../lineup.js';
import type { Bench } from '../scenario.js';
import { serverStats, untilStats } from '../stats.js';
import { delta, KIB, memoryOf, type Memory } from './memory.js';
import { ATTACHED, DETACHED_CALLS, perResumableCall, type HeldPart } from './resume-metrics.js';

const ITEM_BYTES = 100;
/** Far longer than any step takes: a step that never ends fails the run instead. */
const STEP_MS = 30_000;

interface Held {
  readonly memory: Memory;
  readonly replayBytes: number;
}

interface Measured {
  readonly attached: Held;
  readonly detached: Held;
}

async function measure(server: CallwireServer, n: number): Promise<Measured> {
  const relay = await new TcpProxy().start(Number(new URL(server.addresses.wsUrl).port));
  try {
    const before = await memoryOf(server);
    const client = await server.build.client.connect(relay.via(server.addresses.wsUrl), { resume: { graceMs: RESUME_GRACE_MS } });
    const resumed = new Promise((resolve) => client.on('resumed', resolve));
    let started = 0;
    const subs = Array.from({ length: n }, () => client.subscribe('bench/hold', { itemBytes: ITEM_BYTES }).subscribe({ next: () => started++, error: () => undefined }));
    await untilStats(server.ws, (s) => (s.resumableCalls ?? 0) >= n && started >= n, 100, { ms: STEP_MS, what: `${n} resumable calls did not start` });
    const held = async (): Promise<Held> => {
      const memory = delta(before, await memoryOf(server));
      return { memory, replayBytes: (await serverStats(server.ws)).replayBytes ?? 0 };
    };
    const attached = await held();
    relay.down();
    await untilStats(server.ws, (s) => (s.detachedCalls ?? 0) >= n, 100, { ms: STEP_MS, what: `${n} calls did not outlive their lost connection` });
    const detached = await held();
    // The client takes every call up again, and ends them all: nothing is left for the next scenario.
    relay.up();
    await Promise.race([resumed, new Promise((_, reject) => setTimeout(() => reject(new Error('the client did not take its calls up again')), STEP_MS).unref())]);
    subs.forEach((sub) => sub.unsubscribe());
    await client.close();
    await untilStats(server.ws, (s) => s.resumableCalls === 0 && s.liveCalls <= 1, 100, { ms: STEP_MS, what: 'the resumed calls did not end with their clean close' });
    return { attached, detached };
  } finally {
    await relay.stop();
  }
}

export async function memoryPerDetachedCall(bench: Bench): Promise<void> {
  const n = DETACHED_CALLS;
  const servers = bench.lineup.servers.filter((s) => s.resumable);
  const measured = new Map<CallwireServer, Measured>();
  for (const server of servers) measured.set(server, await measure(server, n));
  const rows: { metric: HeldPart; unit: string; of: (h: Held) => number }[] = [
    { metric: 'heap', unit: 'KiB', of: (h: Held) => h.memory.heapUsed / n / KIB },
    { metric: 'RSS', unit: 'KiB', of: (h: Held) => h.memory.rss / n / KIB },
    { metric: 'replay kept', unit: 'B', of: (h: Held) => h.replayBytes / n },
  ];
  for (const server of servers) {
    const own = measured.get(server)!;
    const { name, peers } = server.resumable!;
    const others = servers.filter((s) => peers.includes(s.resumable!.name));
    for (const { metric, unit, of } of rows) {
      const baselines = (state: keyof Measured): Record<string, number> => Object.fromEntries(others.map((s) => [s.resumable!.name, of(measured.get(s)![state])]));
      bench.record.one({ group: 'memory', metric: perResumableCall(metric, 'attached', n), subject: name, unit }, of(own.attached), baselines('attached'));
      bench.record.one(
        { group: 'memory', metric: perResumableCall(metric, 'detached', n), subject: name, unit },
        of(own.detached),
        { [ATTACHED]: of(own.attached), ...baselines('detached') },
      );
    }
  }
}
