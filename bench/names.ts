/** The subjects' names, as rows and peers carry them (and bench/RESULTS.md's sentences find them). */
export const WEBSOCKET = 'callwire WebSocket';
export const WEBTRANSPORT_H2 = 'callwire WebTransport HTTP/2';
export const WEBTRANSPORT_H3 = 'callwire WebTransport HTTP/3';
export const HTTP = 'callwire HTTP';
export const CALLWIRE_CLI = 'callwire exec (CLI process)';
export const DOCKER = 'docker exec (CLI process)';
export const GRPC = 'grpc-js';
export const RAW_WS = 'raw ws';
export const FORMAT_CEILING = 'format ceiling';
/** Appended to each callwire subject of the `--baseline` build. */
export const BASELINE = ' (baseline)';
