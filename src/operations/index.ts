/** callwire operations: discovery and the Docker operations. */
export { discoveryOperations } from './discovery.js';
export { conformanceOperations } from './conformance.js';
export { dockerOperations, dockerEngine, probeDocker, execInput, execOutput, type DockerEngine } from './docker/index.js';
