import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import type { Logger } from '../dispatcher/index.js';
import { nextTurn } from '../flow/index.js';
import { beatSchema } from './beat.js';
import { BeatGate } from './beat-gate.js';
import type { HostTable } from './host-table.js';
import { TableParts } from './table-parts.js';
import { guarded } from './nats-settings.js';
import { ANY_BEAT, hostOfSubject } from './subjects.js';

/** How often a gateway says how many beats of a host it dropped. */
const DROP_LOG_MS = 60_000;
/** A flush of the beats' connection unanswered for this long: the gateway is behind on reading them. */
const BEHIND_MS = 500;

/**
 * The gateway's ear for every host's heartbeat (docs/fleet.md). The NATS reader only
 * weighs a beat (BeatGate: its size and its host's rate) and copies what passes; the
 * parse and the table's update run after it, in a turn of their own, so the link's
 * messages read in between never wait behind a table. A gateway gives this its own NATS
 * connection: a host that floods its beat subject can make NATS drop that connection
 * as a slow consumer, never the one that carries the calls.
 */
export function listenToBeats(nc: NatsConnection, table: HostTable, logger: Logger): () => void {
  const gate = new BeatGate();
  const loggedAt = new Map<string, number>();
  const subscription = subscribe(nc, table, logger, { gate, parts: new TableParts(), loggedAt });
  // NATS answers a flush after every message queued for us before it: one unanswered for long means a
  // flood (or a slow gateway) holds other hosts' beats back in that queue, and their silence says nothing.
  let probing = 0;
  const probe = setInterval(() => {
    if (probing > 0) {
      if (Date.now() - probing > BEHIND_MS) table.deaf('behind', true);
      return;
    }
    probing = Date.now();
    const done = (): void => {
      probing = 0;
      table.deaf('behind', false);
    };
    nc.flush().then(done, done);
  }, BEHIND_MS / 2);
  probe.unref();
  return () => {
    clearInterval(probe);
    subscription.unsubscribe();
  };
}

interface Ear {
  readonly gate: BeatGate;
  readonly parts: TableParts;
  /** When each host's drops were last logged. */
  readonly loggedAt: Map<string, number>;
}

/** Logs `why` for `host` once a minute at most: a flooding host cannot flood the log too. */
function warnNowAndThen(ear: Ear, logger: Logger, host: string, why: string, fields: Record<string, unknown>): void {
  const now = Date.now();
  if (now - (ear.loggedAt.get(host) ?? 0) < DROP_LOG_MS) return;
  ear.loggedAt.set(host, now);
  logger.warn(why, { host, ...fields });
}

function subscribe(nc: NatsConnection, table: HostTable, logger: Logger, ear: Ear): Subscription {
  const { gate, parts } = ear;
  return nc.subscribe(ANY_BEAT, {
    callback: guarded(logger, 'the heartbeats', (msg) => {
      const host = hostOfSubject(msg.subject);
      if (!host) return;
      if (!gate.admit(host, msg.data.byteLength)) return warnNowAndThen(ear, logger, host, 'dropped heartbeats of a host over its bounds (size or rate)', { dropped: gate.takeDropped(host) });
      const data = Buffer.from(msg.data); // the reader's buffer is not ours past this callback
      nextTurn(() => {
        let beat;
        try {
          beat = beatSchema.parse(JSON.parse(data.toString('utf8')));
        } catch {
          return logger.warn('ignored a malformed heartbeat', { host });
        }
        if (!beat.containers) return table.heard(host, beat);
        // A table in parts is applied whole or not at all: until then the beat says only that the host is up.
        const offered = parts.offer(host, beat, data.byteLength);
        if (offered.kind === 'refused') warnNowAndThen(ear, logger, host, 'ignored a container table of a host', { why: offered.why });
        const { containers: _, part: __, parts: ___, ...heartbeat } = beat;
        table.heard(host, offered.kind === 'table' ? { ...heartbeat, containers: offered.containers } : heartbeat);
      });
    }),
  });
}
