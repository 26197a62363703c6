/**
 * callwire/testing: test your operations without sockets. An in-process client calls
 * the call engine directly, with no frames; an in-memory connection runs a real
 * Session against a raw-frame client, through a real codec.
 */
export { InProcessClient, type InProcessCallOptions, type InProcessStream } from './in-process-client.js';
export { MemoryConnection, type MemoryConnectionOptions } from './memory-transport.js';
export { RawFrameClient, type CloseInfo } from './raw-frame-client.js';
