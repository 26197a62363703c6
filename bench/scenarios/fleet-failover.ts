/**
 * A NATS node killed (SIGKILL) under an exec through the fleet: how long from the kill
 * to the exec's next byte, with the node the gateway is connected to killed, then the
 * agent's. The exec prints a numbered line every 10 ms, so a path that was not broken
 * shows its next line within that; the lines are checked to go on without a gap or a
 * repeat (the spec's promise: byte-exact, or an explicit UNAVAILABLE).
 */
import { GATEWAY_CONNECTION, agentConnection, nodeOf } from '../nats-monitor.js';
import { FLEET_HOST, type RunningFleet } from '../fleet.js';
import type { Bench } from '../scenario.js';
import { FLEET_GROUP, fleetPair } from './fleet-pair.js';

const LINE_EVERY_MS = 10;
const COUNTER = ['sh', '-c', `i=0; while :; do echo $i; i=$((i+1)); usleep ${LINE_EVERY_MS * 1000}; done`];
/** Lines before the kill, and after the first one after it (the exec must go on). */
const LINES_AROUND = 20;
const GIVE_UP_MS = 30_000;

type Victim = 'gateway' | 'agent';
const connectionOf = (victim: Victim): string => (victim === 'gateway' ? GATEWAY_CONNECTION : agentConnection(FLEET_HOST));

interface Outcome {
  /** From the kill to the next byte, when the exec went on. */
  readonly nextByteMs?: number;
  /** From the kill to the exec's end with an error, when it ended instead. */
  readonly endedMs?: number;
  /** Neither: no byte and no end within the bench's patience (`GIVE_UP_MS`). */
  readonly stuck?: true;
  /** Lines missing or repeated in what the exec printed. */
  readonly broken: number;
}

async function killUnderExec(bench: Bench, fleet: RunningFleet, victim: Victim): Promise<Outcome> {
  const node = await nodeOf(fleet.cluster, connectionOf(victim));
  if (node === undefined) throw new Error(`no NATS node has the ${victim}'s connection (${connectionOf(victim)})`);
  const stop = new AbortController();
  const build = bench.lineup.servers[0]!.build;
  let text = '';
  let killedAt: number | undefined;
  let nextAt: number | undefined;
  let wake = (): void => undefined;
  const handle = build.client.exec(fleet.gateway.client, bench.container.get(), COUNTER, { encoding: 'binary', signal: stop.signal });
  handle.output.subscribe({
    next: (frame) => {
      if (!('data' in frame) || frame.stream !== 'stdout') return;
      if (killedAt !== undefined) nextAt ??= performance.now();
      text += Buffer.from(frame.data).toString('latin1');
      wake();
    },
    // How it ended is the result's to say.
    error: () => undefined,
  });
  let endedAt: number | undefined;
  const ended = handle.result.then(
    () => undefined,
    () => undefined,
  ).finally(() => {
    endedAt = performance.now();
    wake();
  });
  const lines = (): number => text.split('\n').length - 1;
  /** Whether `test` came true (or the exec ended) within GIVE_UP_MS. */
  const until = async (test: () => boolean): Promise<boolean> => {
    const deadline = performance.now() + GIVE_UP_MS;
    while (!test() && endedAt === undefined) {
      if (performance.now() > deadline) return false;
      await new Promise<void>((resolve) => {
        wake = resolve;
        setTimeout(resolve, 100);
      });
    }
    return true;
  };
  let endedByItself: number | undefined;
  let stuck = false;
  try {
    if (!(await until(() => lines() >= LINES_AROUND))) throw new Error(`the exec through the fleet printed no ${LINES_AROUND} lines within ${GIVE_UP_MS} ms`);
    killedAt = performance.now();
    await fleet.cluster.kill(node, 'SIGKILL');
    stuck = !(await until(() => nextAt !== undefined));
    const after = lines();
    stuck ||= !(await until(() => lines() >= after + LINES_AROUND));
  } finally {
    endedByItself = endedAt;
    stop.abort();
    // An exec stuck through the kill may not end on its abort either: the bench goes on without it.
    await Promise.race([ended, new Promise((resolve) => setTimeout(resolve, GIVE_UP_MS))]);
    await fleet.cluster.start(node);
  }
  const numbers = text.split('\n').slice(0, -1).map(Number);
  const broken = numbers.filter((n, i) => n !== (i === 0 ? 0 : numbers[i - 1]! + 1)).length;
  if (endedByItself !== undefined) return { endedMs: endedByItself - killedAt!, broken };
  return stuck ? { stuck, broken } : { nextByteMs: nextAt! - killedAt!, broken };
}

export async function fleetFailover(bench: Bench): Promise<void> {
  const { fleet, subjects } = await fleetPair(bench);
  const outcomes: Record<Victim, Outcome[]> = { gateway: [], agent: [] };
  for (let round = 0; round < bench.options.runs; round++) {
    for (const victim of ['gateway', 'agent'] as const) outcomes[victim].push(await killUnderExec(bench, fleet, victim));
  }
  const subject = subjects[1].name;
  for (const victim of ['gateway', 'agent'] as const) {
    const of = outcomes[victim];
    const node = `the ${victim}'s NATS node killed (SIGKILL) under an exec printing every ${LINE_EVERY_MS} ms`;
    const next = of.flatMap((o) => (o.nextByteMs === undefined ? [] : [o.nextByteMs]));
    const ended = of.flatMap((o) => (o.endedMs === undefined ? [] : [o.endedMs]));
    if (next.length) bench.record.runs({ group: FLEET_GROUP, metric: `${node}: to its next byte`, subject, unit: 'ms' }, next);
    if (ended.length) bench.record.runs({ group: FLEET_GROUP, metric: `${node}: to its end with an error, instead`, subject, unit: 'ms' }, ended);
    bench.record.one({ group: FLEET_GROUP, metric: `${node}: lines lost or repeated, ${of.length} kills`, subject, unit: 'lines' }, of.reduce((n, o) => n + o.broken, 0));
    bench.record.one({ group: FLEET_GROUP, metric: `${node}: execs with no byte and no end within ${GIVE_UP_MS / 1000} s, of ${of.length}`, subject, unit: 'execs' }, of.filter((o) => o.stuck).length);
  }
}
