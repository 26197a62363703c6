/** The fleet's scenarios measure one path through the fleet against the direct one, in the same rounds. */
import type { Client } from '../../src/client/index.js';
import type { RunningFleet } from '../fleet.js';
import { WEBSOCKET } from '../names.js';
import type { Bench } from '../scenario.js';
import type { Subject } from '../subject.js';

/** The fleet's rows' group. */
export const FLEET_GROUP = 'fleet';

export interface FleetPair {
  readonly fleet: RunningFleet;
  /** SDK → `callwire serve` beside the engine, and SDK → gateway → NATS → agent → engine, in that order. */
  readonly subjects: readonly [Subject, Subject];
  /** Each subject's SDK client, by its name. */
  readonly clients: ReadonlyMap<string, Client>;
}

export async function fleetPair(bench: Bench): Promise<FleetPair> {
  const fleet = await bench.fleet.get();
  const direct = bench.lineup.subjects.find((s) => s.name === WEBSOCKET)!;
  return {
    fleet,
    subjects: [direct, fleet.subject],
    clients: new Map([
      [direct.name, bench.lineup.servers[0]!.ws],
      [fleet.subject.name, fleet.gateway.client],
    ]),
  };
}
