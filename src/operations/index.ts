/** callwire operations: discovery, services, conformance and the Docker operations. */
export { discoveryOperations } from './discovery.js';
export { serviceOperations, type ServiceSources } from './services.js';
export { probeOperations } from './probes.js';
export { dockerOperations, dockerEngine, engineList, engineStream, probeDocker, type DockerEngine } from './docker/index.js';
