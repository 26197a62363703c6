/**
 * Fan-out exec served: `docker/container/exec-many` runs the SDK's `execMany` inside the
 * server, over an in-process connection to its own dispatcher as the caller.
 */
export { execManyOperation, fanOutOperations } from './exec-many-operation.js';
export { LocalConnection } from './local-connection.js';
