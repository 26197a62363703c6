import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import type { Logger } from '../dispatcher/index.js';
import { nextTurn } from '../flow/index.js';
import { beatSchema } from './beat.js';
import { BeatGate } from './beat-gate.js';
import type { HostTable } from './host-table.js';
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
  const subscription = subscribe(nc, table, logger, gate, loggedAt);
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

function subscribe(nc: NatsConnection, table: HostTable, logger: Logger, gate: BeatGate, loggedAt: Map<string, number>): Subscription {
  return nc.subscribe(ANY_BEAT, {
    callback: guarded(logger, 'the heartbeats', (msg) => {
      const host = hostOfSubject(msg.subject);
      if (!host) return;
      if (!gate.admit(host, msg.data.byteLength)) {
        const now = Date.now();
        if (now - (loggedAt.get(host) ?? 0) >= DROP_LOG_MS) {
          loggedAt.set(host, now);
          logger.warn('dropped heartbeats of a host over its bounds (size or rate)', { host, dropped: gate.takeDropped(host) });
        }
        return;
      }
      const data = Buffer.from(msg.data); // the reader's buffer is not ours past this callback
      nextTurn(() => {
        let beat;
        try {
          beat = beatSchema.parse(JSON.parse(data.toString('utf8')));
        } catch {
          return logger.warn('ignored a malformed heartbeat', { host });
        }
        table.heard(host, beat);
      });
    }),
  });
}
