import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimed, loadFeatures, loadScenarios, runScenario, type RunOptions } from '../../src/conformance/index.js';
import type { CodecName } from '../../src/protocol/index.js';
import { probeOperations } from '../../src/operations/index.js';
import { startServer, type RunningServer } from '../../src/server/index.js';
import { DockerFixture } from '../support/docker.js';
import { http3Missing } from '../support/server-fixture.js';
import { skipTitle } from '../support/skip.js';
import { pinnedDefect } from './deno-defects.js';
import { conformanceTokensFor, RUNNER_TOKEN, SCOPELESS_TOKEN } from './tokens.js';

/**
 * The conformance suite run in-process against the real server over one transport, a test
 * per scenario. One file per transport (conformance*.test.ts), so the transports run in
 * parallel workers.
 */

const scenarios = loadScenarios();
const features = loadFeatures();

// msgpack on both transports runs through the real `callwire conformance` command (cli-runs.test.ts).
export type ConformanceTarget = 'WebSocket json' | 'WebTransport HTTP/2 json' | 'WebTransport HTTP/3 json';

const targets: { name: ConformanceTarget; transport: 'websocket' | 'webtransport'; codec: CodecName; url: (s: RunningServer) => string; carrier?: 'h2' | 'h3'; missing?: string | undefined }[] = [
  { name: 'WebSocket json', transport: 'websocket', codec: 'json', url: (s) => s.wsUrl },
  { name: 'WebTransport HTTP/2 json', transport: 'webtransport', codec: 'json', url: (s) => s.wtUrl!, carrier: 'h2' },
  { name: 'WebTransport HTTP/3 json', transport: 'webtransport', codec: 'json', url: (s) => s.wtUrl!, carrier: 'h3', missing: http3Missing },
];

/** The describe of one target: its server, then each scenario that applies to it. */
export function conformanceOver(name: ConformanceTarget): void {
  const target = targets.find((t) => t.name === name)!;
  describe.skipIf(target.missing !== undefined)(skipTitle(`conformance over ${target.name}`, target.missing), () => {
    const docker = new DockerFixture();
    // The runner's own subject owns the containers its scenarios create (spec §12): the check below
    // sees those alone, not those of conformance runs of other test files on the same engine.
    const subject = `conformance-${target.name.replace(/\W+/g, '-')}-${process.pid}`;
    let server: RunningServer;
    let options: RunOptions;
    beforeAll(async () => {
      server = await startServer({
        port: 0,
        webTransportPort: 0,
        docker: docker.engine,
        operations: probeOperations(),
        tokens: conformanceTokensFor(subject),
        limits: { maxCallsInFlight: features.limits.maxCallsInFlight, maxCallsPerIdentity: features.limits.maxCallsPerIdentity },
        keepaliveMs: features.limits.keepaliveMs,
        handshakeTimeoutMs: features.limits.handshakeTimeoutMs,
        http3: target.carrier === 'h3',
      });
      options = { url: target.url(server), codec: target.codec, features, token: RUNNER_TOKEN, scopelessToken: SCOPELESS_TOKEN, certHash: server.certHash, transport: target.carrier };
    });
    afterAll(async () => {
      await server.close();
      // Scenario containers are removed by the runner; nothing of ours may be left.
      const left = await docker.engine.docker.listContainers({ all: true, filters: JSON.stringify({ label: ['callwire.conformance', `callwire.owner=${subject}`] }) });
      expect(left).toEqual([]);
    });

    // Only the scenarios that apply to this transport and codec: the others are not skips, they do not exist here.
    const have = claimed(features, target.transport, target.codec, true, true);
    for (const { area, scenario } of scenarios.filter((s) => s.scenario.requires.every((f) => have.has(f)))) {
      it(`${scenario.id} ${scenario.title}`, async (ctx) => {
        const result = await runScenario(area, scenario, options);
        // Through Deno a pinned defect (./deno-defects.ts, docs/http3.md "Upstream defects") keeps the scenarios it
        // names by id from passing: each is skipped here with its defect; Chromium runs them over HTTP/3 itself
        // (test/browser/http3-conformance.test.ts). When the defect no longer shows, this fails: unpin it.
        const defect = target.carrier === 'h3' ? pinnedDefect('node-through-edge', scenario.id) : undefined;
        if (defect) {
          expect(result).toMatchObject({ status: defect.status, message: expect.stringMatching(defect.message) });
          ctx.skip(`pinned upstream defect ${defect.id}: ${result.message}`);
        }
        expect(result.message).toBe('');
        expect(result.status).toBe('pass');
      }, 60_000);
    }
  });
}
