/**
 * callwire/testing: test your operations without sockets. An in-memory connection
 * runs a real Session against the raw peer, through a real codec.
 */
export { MemoryConnection, type MemoryConnectionOptions } from './memory-transport.js';
export { RawPeer, type CloseInfo } from '../conformance/index.js';
