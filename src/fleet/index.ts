/** callwire's fleet (docs/fleet.md): agents beside Docker engines, gateways in front, NATS between. */
export { startAgent, type AgentOptions, type RunningAgent } from './agent.js';
export { startGateway, type FleetGateway } from './gateway.js';
export { parseNatsUrls, type NatsSettings } from './nats-settings.js';
export { isHostId } from './subjects.js';
export type { HostState } from './host-table.js';
