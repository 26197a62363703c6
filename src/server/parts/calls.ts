import { createDispatcher, Registry, type Dispatcher, type Logger, type ObserveCalls, type ObserveRefusals, type ObserveResumes, type Operation, type DispatcherLimits } from '../../dispatcher/index.js';
import { fanOutOperations } from '../../fan-out/index.js';
import type { FleetGateway } from '../../fleet/index.js';
import { discoveryOperations, probeOperations, serviceOperations, type DockerEngine } from '../../operations/index.js';
import { limits as protocolLimits } from '../../protocol/index.js';
import type { Access } from './access.js';
import type { Connections } from './connections.js';

/** Which operations the server offers, and how their calls are bounded. */
export interface CallOptions {
  /** Operations besides discovery and Docker. */
  readonly operations?: readonly Operation[];
  /** Offer the `conformance/*` operations the conformance suite drives. */
  readonly conformance?: boolean;
  readonly limits?: Partial<DispatcherLimits>;
  /** Whether WebTransport callers may open shared call streams (spec §5.4, WTS-1); default true. */
  readonly sharedStreams?: boolean;
}

/** The operations the server was given; Docker's or the fleet's are added to it, then discovery and services. */
export function givenOperations(options: CallOptions): Registry {
  const registry = new Registry();
  registry.register(...(options.operations ?? []));
  if (options.conformance) registry.register(...probeOperations());
  return registry;
}

export interface DispatcherParts {
  readonly registry: Registry;
  readonly access: Access;
  readonly connections: Connections;
  readonly observe: ObserveCalls | undefined;
  readonly observeRefusals: ObserveRefusals | undefined;
  /** Every resume, taken or refused (the audit log). */
  readonly observeResumes?: ObserveResumes | undefined;
  readonly engine: DockerEngine | undefined;
  readonly fleet: FleetGateway | undefined;
  readonly logger: Logger;
}

/** One dispatcher for every transport, and the operations that call it: discovery and services, which read it, and fan-out exec. */
export function startDispatcher(options: CallOptions, parts: DispatcherParts): Dispatcher {
  const { registry, access, connections, fleet, engine } = parts;
  const dispatcher = createDispatcher({
    registry,
    authenticate: access.authenticate,
    anonymousIdentity: access.anonymousIdentity,
    logger: parts.logger,
    ...(options.limits ? { limits: options.limits } : {}),
    ...(parts.observe ? { observe: parts.observe } : {}),
    ...(parts.observeRefusals ? { observeRefusals: parts.observeRefusals } : {}),
    ...(parts.observeResumes ? { observeResumes: parts.observeResumes } : {}),
    ...(fleet ? { resumeSeam: fleet.resumeSeam } : {}),
    ...(options.sharedStreams === false ? { sharedStreams: false } : {}),
  });
  const { keepaliveMs, maxConnections, handshakeTimeoutMs, guard } = connections;
  registry.register(
    ...fanOutOperations(dispatcher),
    ...discoveryOperations(registry),
    ...serviceOperations({
      callTables: () => dispatcher.connections,
      execKillFailures: () => engine?.counters.execKillFailures ?? 0,
      connections: () => guard.counts,
      resumable: () => ({ kept: dispatcher.resumable.size, detached: dispatcher.resumable.detached, replayBytes: dispatcher.resumable.budget.bytes }),
      limits: { ...dispatcher.limits, maxCallIdBytes: protocolLimits.maxCallIdBytes, keepaliveMs, maxConnections, handshakeTimeoutMs },
      ...(fleet ? { fleetHosts: (identity) => fleet.hosts(identity) } : {}),
    }),
  );
  return dispatcher;
}
