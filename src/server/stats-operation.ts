import { z } from 'zod';
import { defineOperation, type Operation, type Session } from '../dispatcher/index.js';

/**
 * `services/stats`: live calls and connections across the server, so callers (and
 * tests) can see that an aborted subscription is really gone.
 */
export function statsOperation(sessions: () => Iterable<Session>, execKillFailures: () => number = () => 0): Operation {
  return defineOperation({
    name: 'services/stats',
    kind: 'query',
    description: 'Connections and live calls on this server (the caller\'s own stats call included).',
    input: z.null(),
    output: z.object({ connections: z.number().int(), liveCalls: z.number().int(), callsStarted: z.number().int(), execKillFailures: z.number().int() }),
    handler: () => {
      let connections = 0;
      let liveCalls = 0;
      let callsStarted = 0;
      for (const s of sessions()) {
        connections++;
        liveCalls += s.stats.liveCalls;
        callsStarted += s.stats.callsStarted;
      }
      return { connections, liveCalls, callsStarted, execKillFailures: execKillFailures() };
    },
  });
}
