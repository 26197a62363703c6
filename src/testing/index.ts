/**
 * callwire/testing: test your operations without sockets. An in-process client calls
 * the call engine directly, with no frames; an in-memory connection runs a real
 * FrameConnection against the raw peer, through a real codec.
 */
export { InProcessClient, type InProcessCallOptions, type InProcessStream } from './in-process-client.js';
export { MemoryConnection, type MemoryConnectionOptions } from './memory-transport.js';
export { RawPeer, type CloseInfo } from '../conformance/index.js';
