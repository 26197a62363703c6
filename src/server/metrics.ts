import { createRequire } from 'node:module';
import type * as PromClient from 'prom-client';
import type { Registry as MetricRegistry } from 'prom-client';
import type { CallOutcome, ObserveCalls, ObserveRefusals, Registry } from '../dispatcher/index.js';
import type { DockerEngine } from '../operations/index.js';

/** What a scrape reads: a prom-client `Registry` is one, and so is `ServerMetrics`. */
export interface MetricsSource {
  readonly contentType: string;
  metrics(): Promise<string>;
}

/**
 * One server's metrics in Prometheus's text format (docs/cli.md "Metrics"), gateway and
 * agent alike. Calls are counted through the dispatcher's observer hooks (`observe`,
 * `observeRefusals`), the same ones the audit log uses; everything else is read when
 * scraped, so a call costs a few additions and nothing more.
 */
export interface ServerMetrics extends MetricsSource {
  /** This server's own registry (not prom-client's global one): more metrics may be added to it. */
  readonly registry: MetricRegistry;
  readonly observe: ObserveCalls;
  readonly observeRefusals: ObserveRefusals;
  /** Where `callwire_sessions` reads the open connections from (a dispatcher's `connections`). */
  watchSessions(count: () => number): void;
  /**
   * A fleet's figures, read when scraped (docs/fleet.md): `callwire_hosts_up` (a gateway's
   * hosts that are up; absent on an agent) and `callwire_nats_reconnects_total`. A server
   * outside a fleet shows neither.
   */
  watchFleet(read: () => FleetFigures): void;
}

export interface FleetFigures {
  readonly hostsUp?: number;
  readonly natsReconnects: number;
}

export interface MetricsOptions {
  /** The server's operations: a refused call is labelled by the one it named, or `unknown`. */
  readonly operations: Registry;
  /** The engine whose exec kills to count, if the server runs Docker operations itself. */
  readonly engine?: DockerEngine | undefined;
}

/** The label of a refused call that named no operation of ours: the caller's own string never becomes a label. */
export const UNKNOWN_OPERATION = 'unknown';

/** A call's outcome as one label value: `completed`, `cancelled`, or its error's code. */
const outcomeLabel = (outcome: CallOutcome): string => (outcome.kind === 'error' ? outcome.error.code : outcome.kind);

/** What one operation's calls have added up to. */
interface OperationTally {
  bytesIn: number;
  bytesOut: number;
  readonly outcomes: Map<string, number>;
}

let loaded: typeof PromClient | undefined;
/**
 * prom-client, loaded by the first metrics made rather than by importing the library: a
 * program that counts nothing never loads it. Synchronous, as `createMetrics` is.
 */
const promClient = (): typeof PromClient => (loaded ??= createRequire(import.meta.url)('prom-client') as typeof PromClient);

export function createMetrics(options: MetricsOptions): ServerMetrics {
  const { Counter, Gauge, Registry: MetricRegistry } = promClient();
  const registry = new MetricRegistry();
  // Keyed by the operation's registered name (or UNKNOWN_OPERATION), and each by an outcome:
  // both come from the registry and the protocol's and operations' declared codes (ERR-4), so they stay few.
  const tallies = new Map<string, OperationTally>();
  const tallyOf = (operation: string): OperationTally => {
    let tally = tallies.get(operation);
    if (tally === undefined) tallies.set(operation, (tally = { bytesIn: 0, bytesOut: 0, outcomes: new Map() }));
    return tally;
  };
  const countOutcome = (tally: OperationTally, outcome: string): void => void tally.outcomes.set(outcome, (tally.outcomes.get(outcome) ?? 0) + 1);
  let liveCalls = 0;
  let sessions: () => number = () => 0;

  new Counter({
    name: 'callwire_calls_total',
    help: 'Calls that ended, by operation and outcome (completed, cancelled, or the error code; refused calls by their error code).',
    labelNames: ['operation', 'outcome'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const [operation, tally] of tallies) for (const [outcome, count] of tally.outcomes) this.inc({ operation, outcome }, count);
    },
  });
  new Counter({
    name: 'callwire_call_bytes_total',
    help: 'Bytes of calls that ended, by operation: in (the request and every input item as they arrived), out (every output as encoded for the caller).',
    labelNames: ['operation', 'direction'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const [operation, tally] of tallies) {
        this.inc({ operation, direction: 'in' }, tally.bytesIn);
        this.inc({ operation, direction: 'out' }, tally.bytesOut);
      }
    },
  });
  new Gauge({
    name: 'callwire_live_calls',
    help: 'Calls admitted and not yet ended, a resumable call waiting for its caller included.',
    registers: [registry],
    collect() {
      this.set(liveCalls);
    },
  });
  new Gauge({
    name: 'callwire_sessions',
    help: 'Open connections (sessions) on every transport.',
    registers: [registry],
    collect() {
      this.set(sessions());
    },
  });
  const engine = options.engine;
  if (engine) {
    new Counter({
      name: 'callwire_exec_kills_total',
      help: 'Execs killed because their call ended before their command did (spec §12, EXEC-5).',
      registers: [registry],
      collect() {
        this.reset();
        this.inc(engine.counters.execKills);
      },
    });
    new Counter({
      name: 'callwire_exec_kill_failures_total',
      help: 'Exec kills that left processes running or could not be made (spec §12, EXEC-5).',
      registers: [registry],
      collect() {
        this.reset();
        this.inc(engine.counters.execKillFailures);
      },
    });
  }

  return {
    registry,
    contentType: registry.contentType,
    async metrics() {
      const [own, process] = await Promise.all([registry.metrics(), processMetrics().metrics()]);
      return own + process;
    },
    observe(call) {
      liveCalls++;
      let bytesIn = call.requestBytes;
      let bytesOut = 0;
      return {
        input(_item, bytes) {
          bytesIn += bytes;
        },
        output(_output, bytes) {
          bytesOut += bytes;
        },
        ended(outcome) {
          liveCalls--;
          const tally = tallyOf(call.operation.name);
          tally.bytesIn += bytesIn;
          tally.bytesOut += bytesOut;
          countOutcome(tally, outcomeLabel(outcome));
        },
      };
    },
    observeRefusals(call) {
      const tally = tallyOf(options.operations.lookup(call.operationId)?.name ?? UNKNOWN_OPERATION);
      tally.bytesIn += call.requestBytes;
      countOutcome(tally, call.error.code);
    },
    watchSessions(count) {
      sessions = count;
    },
    watchFleet(read) {
      if (read().hostsUp !== undefined) {
        new Gauge({
          name: 'callwire_hosts_up',
          help: "The fleet's hosts that are up.",
          registers: [registry],
          collect() {
            this.set(read().hostsUp ?? 0);
          },
        });
      }
      new Counter({
        name: 'callwire_nats_reconnects_total',
        help: 'Reconnections to the NATS cluster.',
        registers: [registry],
        collect() {
          this.reset();
          this.inc(read().natsReconnects);
        },
      });
    },
  };
}

let processRegistry: MetricRegistry | undefined;

/**
 * The process's own metrics (CPU, memory, event loop, GC), in one registry for the
 * process: they describe it, not a server, and each collection installs observers
 * that are never removed, so it happens once however many servers a process starts.
 */
function processMetrics(): MetricRegistry {
  if (processRegistry === undefined) {
    const { collectDefaultMetrics, Registry: MetricRegistry } = promClient();
    processRegistry = new MetricRegistry();
    collectDefaultMetrics({ register: processRegistry });
    // Gauges named like counters fail Prometheus's own linter (promtool check metrics);
    // each is the sum of the gauge of the same name by `type`, which stays.
    for (const name of ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total']) processRegistry.removeSingleMetric(name);
  }
  return processRegistry;
}
