import { describe } from 'vitest';
import { CLI_RUNS, passesEveryScenario, useConformanceServe } from './cli-runs.js';

// WebTransport: cli-runs-wt-h2.test.ts, cli-runs-wt-h3.test.ts; default flags: cli-runs-newcomer.test.ts.
describe(CLI_RUNS, () => {
  passesEveryScenario(useConformanceServe(), 'WebSocket (msgpack)');
});
