/** callwire operations: discovery now; Docker operations join here. */
export { discoveryOperations } from './discovery.js';
