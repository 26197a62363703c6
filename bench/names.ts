/** The subjects' names, as rows and peers carry them (and bench/RESULTS.md's sentences find them). */
export const WEBSOCKET = 'callwire WebSocket';
/** The WebSocket's SDK streams asking to outlive a lost connection (spec §4.9). */
export const WEBSOCKET_RESUMABLE = 'callwire WebSocket (resumable)';
export const WEBTRANSPORT_H2 = 'callwire WebTransport HTTP/2';
export const WEBTRANSPORT_H3 = 'callwire WebTransport HTTP/3';
export const HTTP = 'callwire HTTP';
/** callwire's plain HTTP through fetch (undici) rather than node:http. */
export const HTTP_FETCH = 'callwire HTTP (fetch)';
/** A bare node:http server that echoes the body: the least an HTTP call costs on Node. */
export const HTTP_CEILING = 'bare node:http echo (HTTP ceiling)';
export const CALLWIRE_CLI = 'callwire exec (CLI process)';
export const DOCKER = 'docker exec (CLI process)';
export const GRPC = 'grpc-js';
export const RAW_WS = 'raw ws';
export const FORMAT_CEILING = 'format ceiling';
/** Appended to each callwire subject of the `--baseline` build. */
export const BASELINE = ' (baseline)';
/** The SDK's WebSocket to a fleet gateway: each Docker call through NATS to the agent beside the engine. */
export const FLEET = 'callwire fleet (gateway → NATS → agent)';
export const CALLWIRE_CP = 'callwire cp (CLI process)';
export const CALLWIRE_CP_FLEET = 'callwire cp through the fleet (CLI process)';
export const DOCKER_CP = 'docker cp (CLI process)';
/** `callwire exec -l LABEL -- true` through a fleet gateway: one CLI process, its default 64 execs at a time. */
export const FAN_OUT = 'callwire exec -l (one CLI process, 64 at a time)';
/** The same fan-out held to xargs's parallelism. */
export const FAN_OUT_8 = 'callwire exec -l --parallel 8 (one CLI process)';
/** The same execs by hand: one `docker exec CONTAINER true` after another. */
export const DOCKER_EXEC_LOOP = 'docker exec, a shell loop';
export const DOCKER_EXEC_XARGS = 'docker exec, xargs -P 8';
