import type { Server } from 'node:http';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadFeatures, loadScenarios } from '../../src/conformance/index.js';
import { probeOperations } from '../../src/operations/index.js';
import { startServer, type RunningServer } from '../../src/server/index.js';
import { bundleConformanceRunner, chromiumMissing, launchChromium, servePage } from '../support/browser.js';
import { http3Missing } from '../support/server-fixture.js';
import { skipTitle } from '../support/skip.js';

// In the page: the conformance runner itself, its WebTransport the browser's own (HTTP/3).
const PAGE_SCRIPT = `
import { runScenario } from '/client.js';
const { url, certHash, features, area, scenario } = JSON.parse(decodeURIComponent(location.hash.slice(1)));
runScenario(area, scenario, { url, codec: 'json', features, certHash }).then(
  (result) => (window.result = result),
  (error) => (window.result = { status: 'error', message: String(error && error.stack || error) }),
);
`;

/**
 * The scenarios of WT-2 that need what Deno's clients cannot do (a caller's reset; a
 * FIN from Deno's own WebTransport), run over HTTP/3 through the Deno edge by a client
 * nobody here wrote: Chromium's WebTransport, which resets and ends streams itself.
 */
const SCENARIOS = ['webtransport-002', 'webtransport-026'];

const missing = chromiumMissing ?? http3Missing;
describe.skipIf(missing !== undefined)(skipTitle('the conformance runner in Chromium, over HTTP/3 through the Deno edge', missing), () => {
  const features = loadFeatures();
  let server: RunningServer;
  let page: Server;
  let pageUrl = '';
  let browser: Browser;

  beforeAll(async () => {
    server = await startServer({
      port: 0,
      webTransportPort: 0,
      docker: false,
      operations: probeOperations(),
      limits: { maxCallsInFlight: features.limits.maxCallsInFlight },
      keepaliveMs: features.limits.keepaliveMs,
      http3: true,
    });
    ({ server: page, url: pageUrl } = await servePage(PAGE_SCRIPT, await bundleConformanceRunner()));
    browser = await launchChromium();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => page?.close(resolve));
    await server?.close();
  });

  for (const id of SCENARIOS) {
    const { area, scenario } = loadScenarios().find((s) => s.scenario.id === id)!;
    it(`${id} ${scenario.title} (${scenario.covers.join(', ')})`, async () => {
      expect(server.http3Reason).toMatch(/Deno edge/);
      const tab = await browser.newPage();
      try {
        // A page whose module does not load (a Node import the bundle left in) says so, rather than timing out.
        const broken = new Promise<never>((_, reject) => {
          tab.on('pageerror', (error) => reject(error));
          tab.on('console', (message) => message.type() === 'error' && reject(new Error(message.text())));
        });
        broken.catch(() => undefined); // it may reject while the page loads, before the race below listens
        await tab.goto(`${pageUrl}#${encodeURIComponent(JSON.stringify({ url: server.wtUrl, certHash: server.certHash, features, area, scenario }))}`);
        await Promise.race([tab.waitForFunction(() => (window as unknown as { result?: unknown }).result !== undefined, undefined, { timeout: 30_000 }), broken]);
        const result = (await tab.evaluate(() => (window as unknown as { result: unknown }).result)) as { status: string; message: string };
        expect(result.message).toBe('');
        expect(result.status).toBe('pass');
      } finally {
        await tab.close();
      }
    }, 60_000);
  }
});
