import type { Logger, Registry } from '../../dispatcher/index.js';
import type { FleetGateway, GatewaySettings } from '../../fleet/index.js';
import type { Teardown } from '../teardown.js';
import type { DockerStatus } from './docker-engine.js';

export interface FleetOptions {
  /** Be a fleet gateway (docs/fleet.md): the Docker operations of every agent on this NATS cluster, instead of a local engine's. */
  readonly fleet?: GatewaySettings;
}

/**
 * Joins the NATS cluster as a gateway and offers its hosts' Docker operations. The
 * fleet (and NATS with it) is loaded here, so a server that is no gateway never loads it.
 */
export async function startFleetGateway(settings: GatewaySettings, maxFrameBytes: number, registry: Registry, logger: Logger, teardown: Teardown): Promise<{ status: DockerStatus; fleet: FleetGateway }> {
  const { startGateway } = await import('../../fleet/index.js');
  const fleet = teardown.use(await startGateway(settings, maxFrameBytes, logger));
  registry.register(...fleet.operations);
  return { status: { on: true, reason: `a fleet gateway over NATS (${hostsUp(fleet)} hosts up)` }, fleet };
}

export const hostsUp = (fleet: FleetGateway): number => fleet.hosts().filter((h) => h.state === 'up').length;
