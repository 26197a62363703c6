import type { NatsConnection } from '@nats-io/transport-node';
import { dockerContracts } from '../contracts/index.js';
import type { Identity, Logger, Operation, ResumeSeam } from '../dispatcher/index.js';
import { FleetClients, type Lease } from './fleet-clients.js';
import { fleetOperations, leaseFor, mayReach } from './fleet-operations.js';
import { FleetResumeSeam } from './fleet-resume-seam.js';
import { listenToBeats } from './gateway-beats.js';
import { GatewayLink } from './gateway-link.js';
import { HostTable, type HostState } from './host-table.js';
import { NamePins, type NamePin } from './name-pins.js';
import { connectNats, type NatsCounters, type NatsSettings } from './nats-settings.js';
import { HELLO } from './subjects.js';

export interface FleetGateway {
  readonly id: string;
  /** The agents' Docker operations as this gateway offers them: each a proxy to the host that holds the container. */
  readonly operations: Operation[];
  /** Where a resumable call another gateway relayed is taken up, from its agent (§4.9). */
  readonly resumeSeam: ResumeSeam;
  /** The hosts `identity` may reach (every host for none), as the gateway last heard them. */
  hosts(identity?: Identity | null): HostState[];
  readonly nats: NatsCounters;
  close(): Promise<void>;
}

/** A gateway's NATS connection and its routing choices (`serve --nats …`, docs/fleet.md). */
export interface GatewaySettings extends NatsSettings {
  /** Container names pinned to hosts (`--pin NAME=HOST`): they resolve to that host only. */
  readonly pins?: readonly NamePin[];
  /** How long a down host's names stay reserved for it before it is forgotten (default 24 h). */
  readonly forgetAfterMs?: number;
  /** How long a merged list waits for each host (default 5 s). */
  readonly listDeadlineMs?: number;
}

/** How long a new gateway waits for the agents' tables before it serves (they answer its hello at once). */
const FIRST_TABLES_MS = 400;

/** Joins the fleet as a gateway (docs/fleet.md): the host table from heartbeats, the link to every agent. */
export async function startGateway(settings: GatewaySettings, maxFrameBytes: number, logger: Logger): Promise<FleetGateway> {
  const pins = new NamePins(settings.pins);
  const { nc, counters, onDisconnect } = await connectNats(settings, 'callwire-gateway', logger);
  const beats = await connectNats(settings, 'callwire-gateway-beats', logger).catch(async (error: unknown) => {
    await nc.close();
    throw error;
  });
  const link = new GatewayLink(nc, logger, maxFrameBytes);
  link.start();
  // What agents sent while the gateway's NATS connection was down is lost: its connections end now, as lost.
  onDisconnect(() => link.loseAll());
  const clients = new FleetClients(link);
  const table = new HostTable(
    {
      gone: (host, error) => {
        logger.warn('fleet host gone', { host, why: error.message });
        clients.gone(host, error);
      },
      ask: (host) => publishHello(beats.nc, [host]),
      ignored: (host, name, pinnedTo) => logger.warn('ignored a host announcing a name pinned to another host', { host, name, pinnedTo }),
      twoAgents: (host, agents) => logger.error('two agents beat as one host: every call to it fails until one of them stops', { host, agents }),
    },
    { pins, ...(settings.forgetAfterMs === undefined ? {} : { forgetAfterMs: settings.forgetAfterMs }) },
  );
  const stopBeats = listenToBeats(beats.nc, table, logger);
  // Beats unheard while their own connection is down say nothing of the hosts: none is down for it.
  beats.onDisconnect(() => table.deaf('disconnected', true));
  beats.onReconnect(() => table.deaf('disconnected', false));
  publishHello(beats.nc);
  await beats.nc.flush();
  await new Promise((resolve) => setTimeout(resolve, FIRST_TABLES_MS));
  const reachable = (host: string, caller: { identity: Identity | null }): Lease | undefined => {
    try {
      return leaseFor(host, caller, routing);
    } catch {
      return undefined; // a host this caller may not reach, or one that is down: no call to take up
    }
  };
  const seam = new FleetResumeSeam(reachable);
  const routing = { hosts: table, clients, seam, ...(settings.listDeadlineMs === undefined ? {} : { listDeadlineMs: settings.listDeadlineMs }) };
  const operations = fleetOperations(dockerContracts, routing);
  return {
    id: link.id,
    operations,
    resumeSeam: seam,
    hosts: (identity = null) => table.states().filter((h) => mayReach(identity, h.id)),
    nats: counters,
    async close() {
      table.close();
      stopBeats();
      await clients.close();
      link.stop();
      await Promise.all([nc.drain().catch(() => undefined), beats.nc.drain().catch(() => undefined)]);
    },
  };
}

function publishHello(nc: NatsConnection, hosts?: string[]): void {
  if (nc.isClosed()) return;
  try {
    nc.publish(HELLO, JSON.stringify(hosts ? { hosts } : {}));
  } catch {
    // draining: the agents' next heartbeats bring their tables anyway
  }
}
