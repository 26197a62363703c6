/**
 * What a connection rides (spec/PROTOCOL.md §5): a WebSocket, or WebTransport over
 * HTTP/2 or HTTP/3; between a fleet gateway and its agents, NATS; within one process (a
 * server's own calls made as its caller, fan-out exec), memory. One name for the SDK, the conformance peer and the CLI.
 */
export type Carrier = 'websocket' | 'http/2' | 'http/3' | 'nats' | 'memory';

/** The WebTransport carriers. */
export type WebTransportCarrier = Exclude<Carrier, 'websocket' | 'nats' | 'memory'>;
