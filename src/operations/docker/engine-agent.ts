import http from 'node:http';
import https from 'node:https';
import { inspect } from 'node:util';

/**
 * The connection pool for requests to the engine; its one difference from Node's
 * default is that the engine's redirects are never followed (spec §12, DOCKER-1).
 *
 * docker-modem follows any 3xx with a `Location` to wherever it points, with a
 * request of its own that has no error handler. The engine answers a path it cleans
 * (`..`, `//`) with 301, so a reference that slipped past the grammar would steer the
 * server to a host and port of the caller's choosing, and an unreachable one would
 * end the process. An engine has no reason to redirect: its `Location` is dropped
 * before docker-modem sees the response, and the 3xx fails that one call, as any
 * status the engine should not answer does.
 */
export function engineAgent(protocol: 'http' | 'https'): http.Agent {
  // As Node's global agent: sockets kept alive, the most recent reused first, idle ones closed after 5 s.
  const options = { keepAlive: true, scheduling: 'lifo', timeout: 5000 } as const;
  const agent = protocol === 'https' ? new https.Agent(options) : new http.Agent(options);
  const pooled = agent as http.Agent & { addRequest(request: http.ClientRequest, options: object): void };
  const addRequest = pooled.addRequest.bind(agent);
  // Node hands each request to its agent after registering the caller's response
  // callback (docker-modem's redirect follower); prepending puts this ahead of it.
  pooled.addRequest = (request, options) => {
    request.prependListener('response', ignoreLocation);
    const started = Date.now();
    // docker-modem ends a request past its timeout with a bare destroy ("socket hang up"): this says what ended it, first.
    request.prependListener('timeout', () => request.destroy(new EngineTimeout(Date.now() - started)));
    addRequest(request, options);
  };
  // docker-modem formats every request's options, this pool with its live sockets among
  // them, with util.inspect (showHidden, depth 4) whether or not its debug log is on: a
  // cost that grows with the engine streams open, until the event loop stalls.
  Object.defineProperty(agent, inspect.custom, { value: () => `[engine agent ${protocol}]` });
  return agent;
}

/** An engine request that got no answer within docker-modem's timeout: the engine is there, but busy or holding what was asked about. */
export class EngineTimeout extends Error {
  readonly code = 'ENGINE_TIMEOUT';

  constructor(waitedMs: number) {
    super(`the Docker engine did not answer within ${Math.round(waitedMs / 1000)} s (it answers nothing about a container while a copy into it runs)`);
  }
}

function ignoreLocation(response: http.IncomingMessage): void {
  delete response.headers.location;
}
