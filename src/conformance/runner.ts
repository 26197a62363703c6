import { isLoopbackName, type CodecName } from '../protocol/index.js';
import type { WtCarrierChoice } from '../webtransport/index.js';
import { needsOf, PROBES, type Features, type Scenario } from './scenario.js';
import { ScenarioRun } from './scenario-run.js';
import { ScenarioSkip } from './verdict.js';

export interface RunOptions {
  readonly url: string;
  readonly codec: CodecName;
  readonly features: Features;
  readonly token?: string | undefined;
  /** A valid token that holds no scopes, for the AUTH-4 scenarios. */
  readonly scopelessToken?: string | undefined;
  readonly certHash?: string | undefined;
  /** WebTransport only: the carrier (HTTP/3, HTTP/2, or auto). */
  readonly transport?: WtCarrierChoice | undefined;
}

export interface ScenarioResult {
  readonly id: string;
  readonly area: string;
  readonly title: string;
  readonly covers: readonly string[];
  readonly status: 'pass' | 'fail' | 'skip';
  readonly message: string;
  readonly ms: number;
  /** A skip for what the server does not offer: the features it lacks. */
  readonly missing?: readonly string[];
}

/** The features a scenario can require, from what the server claims. */
export function claimed(features: Features, transport: 'websocket' | 'webtransport', codec: CodecName, scopeless = false, loopback = false): Set<string> {
  const set = new Set<string>([transport, codec]);
  // Reached at a loopback address, the server is taken to listen on loopback, where §10.1 has it check Host.
  if (loopback) set.add('loopback');
  // Plain HTTP shares the WebSocket's port, so the WebSocket run checks it (spec §5.6).
  if (transport === 'websocket') set.add('http');
  if (scopeless) set.add('scopeless-token');
  if (features.auth) set.add('auth');
  else set.add('no-auth');
  if (features.docker) set.add('docker');
  if (features.probes) set.add(PROBES);
  if (features.limits.keepaliveMs > 0 && features.limits.keepaliveMs <= MAX_KEEPALIVE_UNDER_TEST_MS) set.add('keepalive');
  // Two connections' worth of calls fill it without touching maxCallsInFlight.
  const { maxCallsPerIdentity, maxCallsInFlight, handshakeTimeoutMs } = features.limits;
  if (features.auth && maxCallsPerIdentity > 0 && maxCallsPerIdentity <= 2 * maxCallsInFlight) set.add('identity-cap');
  if (handshakeTimeoutMs > 0 && handshakeTimeoutMs <= MAX_HANDSHAKE_TIMEOUT_UNDER_TEST_MS) set.add('handshake-timeout');
  return set;
}

const MAX_HANDSHAKE_TIMEOUT_UNDER_TEST_MS = 5000;

const MAX_KEEPALIVE_UNDER_TEST_MS = 5000;

/** Why a feature is missing, for the skip message: the report must not blame the server. */
const WHY_MISSING: Readonly<Record<string, string>> = {
  auth: 'the server has no tokens, so it has no anonymous callers to refuse',
  'no-auth': 'the server has tokens configured',
  docker: 'the server offers no docker/container/exec',
  [PROBES]: 'the server does not serve the probe operations conformance/* this scenario drives (callwire serve --conformance serves them)',
  'scopeless-token': 'no --scopeless-token was given',
  loopback: 'the server is not reached at a loopback address, so it need not check Host',
  keepalive: `the server's keepalive is off or longer than ${MAX_KEEPALIVE_UNDER_TEST_MS} ms (serve --keepalive 1 runs it)`,
  'identity-cap': 'tokens and a maxCallsPerIdentity of at most twice maxCallsInFlight (serve --max-calls-per-identity 128 --max-calls-in-flight 64 runs it)',
  'handshake-timeout': `the server's handshakeTimeoutMs is off, unknown or longer than ${MAX_HANDSHAKE_TIMEOUT_UNDER_TEST_MS} ms (serve --handshake-timeout 1 runs it)`,
  websocket: 'this run is over WebTransport',
  http: 'plain HTTP is served on the WebSocket port; the WebSocket run checks it',
  webtransport: 'this run is over WebSocket',
  msgpack: 'this run uses the json codec',
  json: 'this run uses the msgpack codec',
};

export async function runScenario(area: string, scenario: Scenario, options: RunOptions): Promise<ScenarioResult> {
  const started = Date.now();
  const transport = new URL(options.url).protocol === 'https:' ? 'webtransport' : 'websocket';
  const have = claimed(options.features, transport, options.codec, options.scopelessToken !== undefined, isLoopbackName(new URL(options.url).hostname));
  const base = { id: scenario.id, area, title: scenario.title, covers: scenario.covers };
  const missing = needsOf(scenario).filter((f) => !have.has(f));
  if (missing.length > 0) return { ...base, status: 'skip', message: `needs ${missing.map((f) => `${f} (${WHY_MISSING[f] ?? 'not claimed'})`).join(', ')}`, ms: 0, missing };
  const run = new ScenarioRun(scenario, options);
  try {
    await run.setUp();
    for (const step of scenario.steps) await run.step(step);
    return { ...base, status: 'pass', message: '', ms: Date.now() - started };
  } catch (error) {
    if (error instanceof ScenarioSkip) return { ...base, status: 'skip', message: error.message, ms: Date.now() - started };
    return { ...base, status: 'fail', message: error instanceof Error ? error.message : String(error), ms: Date.now() - started };
  } finally {
    await run.tearDown();
  }
}
