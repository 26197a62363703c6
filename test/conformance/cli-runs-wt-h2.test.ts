import { describe } from 'vitest';
import { CLI_RUNS, passesEveryScenario, useConformanceServe } from './cli-runs.js';

describe(CLI_RUNS, () => {
  passesEveryScenario(useConformanceServe(), 'WebTransport over HTTP/2 (msgpack)');
});
