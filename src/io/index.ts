/**
 * Node-side I/O shared by the server's transports and the Node client: how frames
 * leave a socket or a stream within a turn of the event loop. Kept out of
 * `protocol`, which the browser client imports and which uses no Node API.
 */
export { writeBatcher, chunkBatcher, type BatchBounds, type Corkable } from './write-batch.js';
