import { readFileSync } from 'node:fs';
import { connect, type ConnectionOptions, type Msg, type NatsConnection } from '@nats-io/transport-node';
import type { Logger } from '../dispatcher/index.js';

/** How a gateway or an agent reaches the NATS cluster (docs/fleet.md "Running a fleet"). */
export interface NatsSettings {
  /** `nats://host:port` or `tls://host:port`, one per node: the client fails over between them. */
  readonly servers: readonly string[];
  readonly user?: string;
  readonly pass?: string;
  /** PEM file of the CA that signed the nodes' certificates, for `tls://`. */
  readonly caFile?: string;
  /**
   * Run without credentials, or on a server that asks for none (`--nats-insecure`): then any
   * process that reaches NATS may pose as a gateway and run commands on every host. Refused unless set.
   */
  readonly insecure?: boolean;
}

/** What a NATS connection went through, for /metrics and services/info. */
export interface NatsCounters {
  reconnects: number;
}

/**
 * Connects with failover across every node, reconnecting for ever: a node that dies is
 * left within two missed pings (a silent network) or at once (a closed socket).
 */
export interface NatsLink {
  readonly nc: NatsConnection;
  readonly counters: NatsCounters;
  /** Told each time the connection drops: what was in flight on it is lost. */
  onDisconnect(listener: () => void): void;
  /** Told each time it is back. */
  onReconnect(listener: () => void): void;
}

/** `noEcho`: the connection hears no message it published itself (an agent hears its own host's beats, for another agent's). */
export async function connectNats(settings: NatsSettings, name: string, logger: Logger, { noEcho = false } = {}): Promise<NatsLink> {
  if ((settings.user === undefined || settings.pass === undefined) && !settings.insecure) {
    throw new Error('no NATS credentials: give --nats-user and the password (CALLWIRE_NATS_PASS or --nats-pass-file); without them anyone who reaches NATS can pose as a gateway (--nats-insecure runs so anyway)');
  }
  const options: ConnectionOptions = {
    servers: [...settings.servers],
    name,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 250,
    reconnectJitter: 100,
    pingInterval: 2000,
    maxPingOut: 2,
    waitOnFirstConnect: false,
    noEcho,
    ...(settings.user !== undefined ? { user: settings.user } : {}),
    ...(settings.pass !== undefined ? { pass: settings.pass } : {}),
  };
  if (settings.caFile !== undefined || settings.servers.some((s) => s.startsWith('tls://'))) {
    options.tls = settings.caFile !== undefined ? { ca: readFileSync(settings.caFile, 'utf8') } : {};
  }
  let nc: NatsConnection;
  try {
    nc = await connect(options);
  } catch (error) {
    throw new Error(`cannot connect to NATS at ${settings.servers.join(', ')}: ${error instanceof Error ? error.message : String(error)}`);
  }
  // Credentials prove nothing to a server that takes anyone: its subjects' permissions are what the fleet's trust rests on.
  const unauthenticated = (): string | undefined => (nc.info?.auth_required === true ? undefined : `the NATS server ${nc.getServer()} does not ask for authentication: any process that reaches it could pose as a gateway and run commands on every host (configure its users as scripts/nats-cluster.sh does, or run with --nats-insecure)`);
  const refused = settings.insecure ? undefined : unauthenticated();
  if (refused) {
    await nc.close().catch(() => undefined);
    throw new Error(refused);
  }
  const counters: NatsCounters = { reconnects: 0 };
  const disconnected: (() => void)[] = [];
  const reconnected: (() => void)[] = [];
  void (async () => {
    for await (const status of nc.status()) {
      if (status.type === 'reconnect') {
        counters.reconnects++;
        logger.info('reconnected to NATS', { connection: name, server: String((status as { server?: unknown }).server ?? '') });
        const why = settings.insecure ? undefined : unauthenticated();
        if (why) {
          // A node of the cluster that lost its users is no safer than a bare server: leave NATS rather than serve through it.
          logger.error('left NATS: a server without authentication', { connection: name, why });
          await nc.close().catch(() => undefined);
          continue;
        }
        for (const listener of reconnected) listener();
      } else if (status.type === 'disconnect') {
        logger.warn('lost the NATS connection; reconnecting', { connection: name });
        for (const listener of disconnected) listener();
      } else if (status.type === 'error') logger.warn('NATS reported an error', { connection: name, error: String((status as { error?: unknown }).error ?? '') });
    }
  })();
  return { nc, counters, onDisconnect: (listener) => void disconnected.push(listener), onReconnect: (listener) => void reconnected.push(listener) };
}

/** `a,b` → ['a', 'b'], with `nats://` where no scheme was given. */
export function parseNatsUrls(list: string): string[] {
  return list
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0)
    .map((s) => (/^[a-z]+:\/\//.test(s) ? s : `nats://${s}`));
}

/**
 * A publish that never throws into its caller: a closed or draining connection drops
 * the message, which the link's numbering turns into a lost connection at the other end.
 */
export function publisher(nc: NatsConnection, subject: string, logger: Logger): (data: Uint8Array) => void {
  return (data) => {
    try {
      nc.publish(subject, data);
    } catch (error) {
      logger.debug('a link message was not published', { subject, error: (error as Error).message });
    }
  };
}

/**
 * A subscription callback that never throws into the NATS client: the callback runs in
 * its reader, which a throw ends, and the connection then hears nothing from anyone
 * until it is found stale. Whatever one message makes its handling do costs that message.
 */
export function guarded(logger: Logger, what: string, callback: (msg: Msg) => void): (error: Error | null, msg: Msg) => void {
  return (error, msg) => {
    if (error) return logger.warn(`${what}: the subscription failed`, { error: error.message });
    try {
      callback(msg);
    } catch (thrown) {
      logger.error(`${what}: a message could not be handled`, { subject: msg.subject, error: thrown instanceof Error ? thrown.message : String(thrown) });
    }
  };
}
