/** callwire's fleet (docs/fleet.md): agents beside Docker engines, gateways in front, NATS between. */
export { startAgent, type AgentOptions, type RunningAgent } from './agent.js';
export { startGateway, type FleetGateway, type GatewaySettings } from './gateway.js';
export { parsePin, type NamePin } from './name-pins.js';
export { parseFleetToken } from './fleet-token.js';
export { parseNatsUrls, type NatsSettings } from './nats-settings.js';
export { isHostId } from './subjects.js';
export type { HostState } from './host-table.js';
