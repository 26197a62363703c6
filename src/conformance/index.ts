/** callwire conformance: scenarios as data, run over the raw protocol against any server. */
export { loadScenarios, loadFeatures, scenarioSchema, featuresSchema, defaultScenarioDir, defaultFeaturesFile, type Scenario, type Features } from './scenario.js';
export { runScenario, claimed, type RunOptions, type ScenarioResult } from './runner.js';
export { table, jsonReport, junitReport } from './report.js';
export { coverage, statementIds, type Coverage } from './coverage.js';
export { rawConnect, probeHandshake, type RawConnectOptions } from './raw-connection.js';
export { RawPeer, type RawWire, type CloseInfo } from './raw-peer.js';
export { mismatch } from './match.js';
export { discoverFeatures, type DiscoverOptions } from './discover.js';
export { EventQueue, decodedEvent, type RawEvent } from './events.js';
export { PROBES } from './scenario.js';
