/**
 * The bench's scenarios, in the order they run: `npm run bench -- --only <id|group>`
 * picks some, `--quick` runs the quick ones smaller. Memory first: later scenarios leave
 * garbage that makes RSS deltas meaningless.
 */
import type { Options } from './options.js';
import type { Scenario } from './scenario.js';
import { codec } from './scenarios/codec.js';
import { copyThroughput } from './scenarios/copy.js';
import { execRoundTrip, execThroughput } from './scenarios/exec.js';
import { fleetExecRoundTrip, fleetExecThroughput } from './scenarios/fleet-exec.js';
import { fleetFailover } from './scenarios/fleet-failover.js';
import { fleetFanOut } from './scenarios/fleet-fan-out.js';
import { fleetMemoryPerIdleHost } from './scenarios/fleet-memory.js';
import { fleetRoutable } from './scenarios/fleet-routable.js';
import { fleetSubscriptions } from './scenarios/fleet-subscriptions.js';
import { fleetUnary } from './scenarios/fleet-unary.js';
import { growth } from './scenarios/growth.js';
import { keystrokes } from './scenarios/keystrokes.js';
import { memoryPerConnection, memoryPerSubscription } from './scenarios/memory.js';
import { memoryPerDetachedCall } from './scenarios/memory-resumable.js';
import { resumeAfterCut } from './scenarios/resume-cut.js';
import { scaling } from './scenarios/scaling.js';
import { LARGE_ITEMS, SMALL_ITEMS, streaming } from './scenarios/streaming.js';
import { unary } from './scenarios/unary.js';

export const SCENARIOS: readonly Scenario[] = [
  { id: 'memory-connections', group: 'memory', quick: false, run: memoryPerConnection },
  { id: 'memory-subscriptions', group: 'memory', quick: false, run: memoryPerSubscription },
  { id: 'memory-resumable', group: 'memory', quick: false, run: memoryPerDetachedCall },
  { id: 'unary-1', group: 'unary', quick: true, run: (b) => unary(b, 1) },
  { id: 'unary-64', group: 'unary', quick: false, run: (b) => unary(b, 64) },
  { id: 'growth', group: 'growth', quick: false, run: growth },
  { id: 'stream-100B', group: 'streaming', quick: true, run: (b) => streaming(b, SMALL_ITEMS) },
  { id: 'stream-64KiB', group: 'streaming', quick: false, run: (b) => streaming(b, LARGE_ITEMS) },
  { id: 'resume-cut', group: 'resume', quick: false, run: resumeAfterCut },
  { id: 'exec-dd', group: 'exec', quick: true, docker: true, run: execThroughput },
  { id: 'exec-true', group: 'exec', quick: false, docker: true, run: execRoundTrip },
  { id: 'keystroke', group: 'exec', quick: false, docker: true, run: keystrokes },
  { id: 'copy', group: 'copy', quick: false, docker: true, run: copyThroughput },
  { id: 'codec', group: 'codec', quick: false, run: codec },
  { id: 'scaling', group: 'scaling', quick: false, run: scaling },
  // The fleet's rows (a NATS cluster, an agent, a gateway, started by the first of them), each beside the direct path;
  // a run of their own (`--only fleet --out bench/results/fleet.json`), which the page reads beside the full run's.
  { id: 'fleet-memory', group: 'fleet', quick: false, alone: true, docker: true, run: fleetMemoryPerIdleHost },
  { id: 'fleet-exec-true', group: 'fleet', quick: false, alone: true, docker: true, run: fleetExecRoundTrip },
  { id: 'fleet-exec-dd', group: 'fleet', quick: false, alone: true, docker: true, run: fleetExecThroughput },
  { id: 'fleet-unary-1', group: 'fleet', quick: false, alone: true, docker: true, run: (b) => fleetUnary(b, 1) },
  { id: 'fleet-unary-16', group: 'fleet', quick: false, alone: true, docker: true, run: (b) => fleetUnary(b, 16) },
  { id: 'fleet-routable', group: 'fleet', quick: false, alone: true, docker: true, run: fleetRoutable },
  { id: 'fleet-subscriptions', group: 'fleet', quick: false, alone: true, docker: true, run: fleetSubscriptions },
  { id: 'fleet-failover', group: 'fleet', quick: false, alone: true, docker: true, run: fleetFailover },
  // Two real engines (a second one of its own) and 50 containers: issue 35's fan-out beside docker exec.
  { id: 'fleet-fan-out-50', group: 'fleet', quick: false, alone: true, docker: true, run: fleetFanOut },
  { id: 'fleet-copy', group: 'fleet', quick: false, alone: true, docker: true, run: (b) => copyThroughput(b, true) },
];

/** The scenarios `options` ask for; an unknown name in `--only` is an error, not an empty run. */
export function selectScenarios(options: Pick<Options, 'quick' | 'only'>, all: readonly Scenario[] = SCENARIOS): Scenario[] {
  const { only } = options;
  if (only) {
    const unknown = only.filter((name) => !all.some((s) => s.id === name || s.group === name));
    if (unknown.length) throw new Error(`no scenario or group ${unknown.join(', ')}; there are: ${all.map((s) => `${s.id} (${s.group})`).join(', ')}`);
  }
  // A scenario named by its id runs whatever --quick says (smaller); a group or the whole lineup keeps its quick ones.
  if (only) return all.filter((s) => only.includes(s.id) || (only.includes(s.group) && (!options.quick || s.quick)));
  return all.filter((s) => !s.alone && (!options.quick || s.quick));
}
