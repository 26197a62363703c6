import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadFeatures, loadScenarios, runScenario, type RunOptions } from '../../src/conformance/index.js';
import { probeOperations } from '../../src/operations/index.js';
import { startServer, type RunningServer, type ServerOptions } from '../../src/server/index.js';
import { conformanceTokens, RUNNER_TOKEN } from './tokens.js';

const scenarios = loadScenarios().filter((s) => s.area === 'origin');
const byId = (id: string): (typeof scenarios)[number] => scenarios.find((s) => s.scenario.id === id)!;

async function serve(options: ServerOptions): Promise<{ server: RunningServer; run: RunOptions }> {
  const server = await startServer({ port: 0, webTransportPort: false, docker: false, operations: probeOperations(), tokens: conformanceTokens, ...options });
  return { server, run: { url: server.wsUrl, codec: 'msgpack', features: loadFeatures(), token: RUNNER_TOKEN } };
}

/**
 * The §10.1 scenarios (ORG-1..4) run as `callwire conformance` runs them, and fail
 * against a server that lets a foreign page or a rebinding name through: each can
 * fail on the statement it claims.
 */
describe('the origin scenarios (spec §10.1)', () => {
  it('cover each of ORG-1 to ORG-4', () => {
    expect(scenarios.flatMap((s) => s.scenario.covers)).toEqual(expect.arrayContaining(['ORG-1', 'ORG-2', 'ORG-3', 'ORG-4']));
  });

  describe('against a server that keeps the rules', () => {
    let target: { server: RunningServer; run: RunOptions };
    beforeAll(async () => (target = await serve({})));
    afterAll(() => target.server.close());
    for (const { area, scenario } of scenarios) {
      it(`${scenario.id} passes`, async () => {
        const result = await runScenario(area, scenario, target.run);
        expect(result.message).toBe('');
        expect(result.status).toBe('pass');
      });
    }
  });

  describe('against a server that lets every origin through (--allow-origin "*")', () => {
    let target: { server: RunningServer; run: RunOptions };
    beforeAll(async () => (target = await serve({ allowOrigins: ['*'] })));
    afterAll(() => target.server.close());
    it('origin-001 fails on the WebSocket upgrade', async () => {
      const result = await runScenario('origin', byId('origin-001').scenario, target.run);
      expect(result).toMatchObject({ status: 'fail', message: expect.stringMatching(/expected the upgrade to be refused with 403/) });
    });
    it('origin-002 fails on POST /call/', async () => {
      const result = await runScenario('origin', byId('origin-002').scenario, target.run);
      expect(result).toMatchObject({ status: 'fail', message: expect.stringMatching(/^POST \/call\/conformance\/echo: status 200, expected 403/) });
    });
  });

  describe('against a server that takes a rebinding name in Host (--allow-host)', () => {
    let target: { server: RunningServer; run: RunOptions };
    beforeAll(async () => (target = await serve({ allowHosts: ['rebound.example'] })));
    afterAll(() => target.server.close());
    it('origin-004 fails', async () => {
      const result = await runScenario('origin', byId('origin-004').scenario, target.run);
      expect(result).toMatchObject({ status: 'fail', message: expect.stringMatching(/expected the upgrade to be refused with 403/) });
    });
  });

  it('origin-004 is skipped, saying why, when the server is not reached at a loopback address', async () => {
    const result = await runScenario('origin', byId('origin-004').scenario, { url: 'ws://192.0.2.1:9/callwire', codec: 'msgpack', features: loadFeatures() });
    expect(result).toMatchObject({ status: 'skip', message: expect.stringMatching(/needs loopback \(the server is not reached at a loopback address/) });
  });
});
