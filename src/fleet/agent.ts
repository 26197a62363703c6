import { createDispatcher, Registry, type Logger, type ObserveCalls, type ObserveRefusals, type DispatcherLimits } from '../dispatcher/index.js';
import { discoveryOperations, dockerOperations, probeDocker, type DockerEngine } from '../operations/index.js';
import { AgentBeacon } from './agent-beacon.js';
import { AgentLink } from './agent-link.js';
import { agentSelf, HostClaim } from './host-claim.js';
import { connectNats, type NatsCounters, type NatsSettings } from './nats-settings.js';
import { isHostId } from './subjects.js';

export interface AgentOptions {
  readonly nats: NatsSettings;
  readonly hostId: string;
  readonly engine: DockerEngine;
  readonly logger: Logger;
  readonly limits?: Partial<DispatcherLimits>;
  /** Watches the agent's calls (its /metrics): given what it reads, it answers with the dispatcher's observers. */
  readonly instrument?: (agent: AgentReadings) => { readonly observe?: ObserveCalls; readonly observeRefusals?: ObserveRefusals };
}

/** What an agent's instruments read, when they read it. */
export interface AgentReadings {
  readonly registry: Registry;
  /** The gateways' virtual connections open here. */
  readonly sessions: () => number;
  readonly natsReconnects: () => number;
}

export interface RunningAgent {
  readonly hostId: string;
  /** What the engine probe said when the agent started. */
  readonly engine: { readonly ok: boolean; readonly reason: string };
  readonly nats: NatsCounters;
  readonly openConnections: () => number;
  /** Told once if another agent of this host id, started first, turns out to serve it too: this one should close. */
  onDisplaced(listener: (message: string) => void): void;
  close(graceMs?: number): Promise<void>;
}

/**
 * A fleet agent (docs/fleet.md): serves its engine's Docker operations to the
 * gateways over NATS, and keeps its containers routable. It dials out and listens on
 * no port; what it may publish and read is its NATS user's permissions.
 */
export async function startAgent(options: AgentOptions): Promise<RunningAgent> {
  if (!isHostId(options.hostId)) throw new Error(`--host-id ${JSON.stringify(options.hostId)} is not a host id: [a-z0-9][a-z0-9_-]{0,62} (one NATS subject token)`);
  const engine = await probeDocker(options.engine);
  if (!engine.ok) options.logger.warn('the Docker engine does not answer; serving anyway, its calls fail until it does', { reason: engine.reason });
  const registry = new Registry();
  registry.register(...dockerOperations(options.engine));
  registry.register(...discoveryOperations(registry));
  // The instruments are made before the link and the NATS connection they read.
  const made: { link?: AgentLink; counters?: NatsCounters } = {};
  const instruments = options.instrument?.({ registry, sessions: () => made.link?.openConnections ?? 0, natsReconnects: () => made.counters?.reconnects ?? 0 }) ?? {};
  const dispatcher = createDispatcher({
    registry,
    logger: options.logger,
    anonymousIdentity: null,
    ...(options.limits ? { limits: options.limits } : {}),
    ...(instruments.observe ? { observe: instruments.observe } : {}),
    ...(instruments.observeRefusals ? { observeRefusals: instruments.observeRefusals } : {}),
  });
  const self = agentSelf();
  const connected = await connectNats(options.nats, `callwire-agent-${options.hostId}`, options.logger, { noEcho: true });
  const nc = connected.nc;
  made.counters = connected.counters;
  // Before it takes a single message meant for its host: another agent may already serve it.
  const claim = await HostClaim.take(nc, options.hostId, self, options.logger).catch(async (error: unknown) => {
    await Promise.all([nc.close().catch(() => undefined), dispatcher.shutdown(0)]);
    throw error;
  });
  const agentLink = new AgentLink({ nc, host: options.hostId, dispatcher, logger: options.logger });
  made.link = agentLink;
  await agentLink.start();
  // What the agent sent while its NATS connection was down is lost: its connections end now, as lost.
  connected.onDisconnect(() => agentLink.loseAll());
  const beacon = new AgentBeacon(nc, options.hostId, options.engine, options.logger, self);
  await beacon.start();
  return {
    hostId: options.hostId,
    engine,
    nats: connected.counters,
    openConnections: () => agentLink.openConnections,
    onDisplaced: (listener) => claim.onDisplaced(listener),
    async close(graceMs = 0) {
      claim.close();
      beacon.stop();
      await dispatcher.shutdown(graceMs);
      agentLink.stop();
      await nc.drain().catch(() => undefined);
    },
  };
}
