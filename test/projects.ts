import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Which vitest project each test file runs in (docs/development.md "Testing"). A file a list
 * below names goes where the list says; any other file goes to the first that fits:
 *
 * 1. `serial`, one file at a time with nothing else running, after the others: a file that
 *    changes the machine's own network (a veth and an address in the root namespace:
 *    test/support/netns-host.ts, bench/netns.ts; iptables rules of its own), or one that
 *    SERIAL_FILES names: a bound in wall-clock time (a signal, a cancellation or an idle
 *    close within N ms, which a loaded neighbour could stretch), or another machine-wide effect.
 * 2. `unit`, in parallel, no Docker, no NATS, no dist build: the files in UNIT_DIRS.
 * 3. `integration`, in parallel, with the built dist/ and the Docker engine: everything else,
 *    so a new file nobody classified gets everything it could need. That includes what is
 *    safe beside a neighbour by construction:
 *    - a NATS cluster or a fleet of its own (test/support/nats-cluster.ts, fleet.ts) or any
 *      port picked now and bound later: test/support/ports.ts hands each vitest worker its own
 *      range, below the kernel's ephemeral ports, so two files never pick the same port;
 *    - the shared cluster of CALLWIRE_NATS_* (scripts/nats-cluster.sh up, .ci/run), read or
 *      used as its gateway user: its host users are every file's, so a file that runs agents
 *      starts a fleet of its own;
 *    - a memory bound: each file runs in a fork of its own (vitest.config.ts, isolate), so a
 *      bound on its own heap or on a child's RSS measures only what the file started. A file
 *      that bounds its own heap must never be `serial`, whose files share one process
 *      (test/lint/projects.test.ts holds this);
 *    - network namespaces of its own (test/support/netns-link.ts: both ends, the veth and
 *      the iptables rules live inside namespaces named by its process id).
 *    - Docker engines of its own (test/support/private-engine.ts: a root, a socket and
 *      containers nobody else's; no TCP port, no host network).
 *
 * test/unit-guard.ts fails a `unit` test that reaches for Docker or NATS, so a file put
 * there by mistake shows at once.
 */

/** Marks in a file's source that make it serial (see rule 1). */
const SERIAL_MARKS: RegExp[] = [/support\/netns-host\.js|bench\/netns\.js/, /\biptables\b/];

/** Marks of a bound on the file's own process's heap, which `serial`'s shared process would spoil. */
export const OWN_HEAP_MARKS: RegExp[] = [/process\.memoryUsage\(\)/, /\bliveBytes\(\)/];

/** Serial for a reason its source does not show by a mark. */
const SERIAL_FILES = [
  // A wall-clock bound (a signal, a cancellation or an idle close within N ms).
  'test/docker/exec-behaviour.test.ts',
  'test/docker/keepalive.test.ts',
  // Pure code, but its rule is "no bytes taken in a whole interval" at 100 ms, with the slow
  // reader and the server in one process: a worker starved for an interval stalls both, and
  // the keepalive counts a drop (a fresh clone's CI at 5942887: all 512 messages read, 1 drop).
  'test/unit/keepalive.test.ts',
  'test/cli/subscribe.test.ts',
  'test/cli/signals.test.ts',
  'test/cli/exec.test.ts',
  // A fan-out's other targets reach a 20 KB/s reader within 5 s of their end, beside a flood.
  'test/cli/fan-out-fair.test.ts',
  'test/fleet/link-loss.test.ts',
  // A fleet's failover in seconds: heartbeats each second, a host down after 3 s of silence,
  // calls to it failing within 10 s and it routable again within 15 s of its restart.
  'test/fleet/fleet-failures.test.ts',
  // Uses the shared engine's `demo` container by its name (npm run fleet's host a).
  'test/integration/demo-fleet.test.ts',
];

/** Directories of pure code: state machines, codecs, lint rules. */
const UNIT_DIRS = ['test/unit/', 'test/protocol/', 'test/flow/', 'test/io/', 'test/lint/', 'test/dispatcher/'];

/** Pure files that live beside the code they test, in directories that also hold integration tests. */
const UNIT_FILES = [
  'test/bench/report.test.ts',
  // Bounds its own process's heap: a fork of its own, not the serial project's shared one,
  // where the files before it left their garbage (it failed there, 8.4 MB over a 6 MB bound).
  'test/dispatcher/backpressure.test.ts',
  'test/client/client-call.test.ts',
  'test/client/input-pump.test.ts',
  'test/client/resuming-connection.test.ts',
  'test/client/target-selection.test.ts',
  'test/client/exec-many.test.ts',
  'test/cli/fan-out-output.test.ts',
  'test/conformance/scenario-steps.test.ts',
  'test/docs/docs-match-code.test.ts',
  'test/fleet/fleet-contracts.test.ts',
  'test/fleet/relay-acks.test.ts',
  'test/lab/example-container.test.ts',
  'test/server/teardown.test.ts',
  'test/bench/results.test.ts',
  'test/contracts/engine-references.test.ts',
  'test/contracts/types.test.ts',
  'test/docker/demux.test.ts',
  'test/docker/json-array-items.test.ts',
  'test/docker/log-lines.test.ts',
  'test/fleet/beat-gate.test.ts',
  'test/fleet/host-table.test.ts',
  'test/fleet/container-index.test.ts',
  'test/fleet/table-parts.test.ts',
  'test/fleet/link-message.test.ts',
  'test/webtransport/bridge-mux-guard.test.ts',
  'test/webtransport/bridge-mux.test.ts',
  'test/webtransport/bridge-protocol.test.ts',
  // Names the serial marks as text, to test them.
  'test/lint/projects.test.ts',
  // Binds loopback ports of its own, nothing else.
  'test/support/ports.test.ts',
];

/** Files in UNIT_DIRS that need more than pure code. */
const NOT_UNIT_FILES: string[] = [];

export type ProjectName = 'unit' | 'integration' | 'serial';

function testFiles(root: string): string[] {
  return readdirSync(join(root, 'test'), { recursive: true, encoding: 'utf8' })
    .filter((path) => path.endsWith('.test.ts'))
    .map((path) => `test/${path.split('\\').join('/')}`)
    .sort();
}

/** Every file the lists above name, for a test that each still exists. */
export const LISTED_FILES = [...SERIAL_FILES, ...UNIT_FILES, ...NOT_UNIT_FILES];

export function projectOf(file: string, source: string): ProjectName {
  if (SERIAL_FILES.includes(file)) return 'serial';
  if (UNIT_FILES.includes(file)) return 'unit';
  if (SERIAL_MARKS.some((mark) => mark.test(source))) return 'serial';
  if (NOT_UNIT_FILES.includes(file)) return 'integration';
  if (UNIT_DIRS.some((dir) => file.startsWith(dir))) return 'unit';
  return 'integration';
}

/** Every test file under `test/` (paths relative to `root`), by project. */
export function testProjects(root: string): Record<ProjectName, string[]> {
  const projects: Record<ProjectName, string[]> = { unit: [], integration: [], serial: [] };
  for (const file of testFiles(root)) {
    projects[projectOf(file, readFileSync(join(root, file), 'utf8'))].push(file);
  }
  return projects;
}
