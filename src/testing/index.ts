/**
 * callwire/testing: test your operations without sockets. An in-memory connection
 * runs a real Session against a raw-frame client, through a real codec.
 */
export { MemoryConnection, type MemoryConnectionOptions } from './memory-transport.js';
export { RawFrameClient, type CloseInfo } from './raw-frame-client.js';
