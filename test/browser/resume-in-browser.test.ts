import type { Server } from 'node:http';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundleClient, hasChromium, launchChromium, servePage } from '../support/browser.js';
import { recordingLogger } from '../support/recording-logger.js';
import { hasHttp3, http3Missing, ServerFixture } from '../support/server-fixture.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { UdpProxy } from '../support/udp-proxy.js';
import { until } from '../support/wait.js';

// In the page: a resumable subscription through the SDK's reconnecting client; the test
// cuts the relay between the page and the server once the page has seen part of it.
const PAGE_SCRIPT = `
import { connect } from '/client.js';
const { url, certHash, count } = JSON.parse(decodeURIComponent(location.hash.slice(1)));
window.seen = [];
window.events = [];
try {
  const client = await connect(url, { ...(certHash ? { certHash } : {}), resume: { graceMs: 30000 } });
  client.on('reconnecting', (e) => window.events.push(e.type));
  client.on('resumed', (e) => window.events.push(e.type));
  for await (const item of client.iterate('test/ticker', { count, intervalMs: 2 })) window.seen.push(item.n);
  await client.close();
  window.result = { seen: window.seen, events: window.events };
} catch (error) {
  window.result = { error: String(error && error.stack || error), seen: window.seen.length, events: window.events };
}
`;

const COUNT = 2000;

interface Case {
  readonly name: string;
  readonly skip: string | false;
  /** The server's address for the page, through a relay the test can cut. */
  relay(server: ServerFixture['server']): Promise<{ url: string; certHash?: string; cut(): void; stop(): Promise<void> }>;
}

const cases: Case[] = [
  {
    name: 'WebSocket (a TCP relay between the page and the server, destroyed)',
    skip: false,
    async relay(server) {
      const proxy = await new TcpProxy().start(Number(new URL(server.wsUrl).port));
      return { url: proxy.via(server.wsUrl), cut: () => proxy.cut(), stop: () => proxy.stop() };
    },
  },
  {
    name: "WebTransport over HTTP/3 (a UDP relay that stops passing the page's datagrams)",
    skip: http3Missing ?? false,
    async relay(server) {
      const proxy = await new UdpProxy().start(Number(new URL(server.wtUrl!).port));
      return { url: proxy.via(server.wtUrl!), certHash: server.certHash!, cut: () => proxy.cut('from-client'), stop: () => proxy.stop() };
    },
  },
];

/** §4.9 in a real browser: the browser bundle of the SDK resumes a subscription across a cut, every item once. */
describe.skipIf(!hasChromium)(`resumable calls in a browser${hasChromium ? '' : ' (skipped: no /usr/bin/chromium; .ci/run installs it)'}`, () => {
  const fx = new ServerFixture();
  let page: Server;
  let browser: Browser;
  let pageUrl = '';
  // The server's own account (how each HTTP/3 session ended), shown when the page's call was lost.
  const serverLog = recordingLogger();

  beforeAll(async () => {
    const served = await servePage(PAGE_SCRIPT, await bundleClient());
    page = served.server;
    pageUrl = served.url;
    await fx.start({ ...(hasHttp3 ? { http3: true, keepaliveMs: 2000 } : {}), allowOrigins: [new URL(pageUrl).origin], logger: serverLog.logger });
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => page?.close(resolve));
    await fx.stop();
  });

  for (const c of cases) {
    it.skipIf(c.skip !== false)(`over ${c.name}: a subscription cut in its middle resumes, every item once, in order${c.skip ? ` (skipped: ${c.skip})` : ''}`, async () => {
      const relay = await c.relay(fx.server);
      serverLog.lines.length = 0;
      let tab: Page | undefined;
      try {
        tab = await browser.newPage();
        await tab.goto(`${pageUrl}#${encodeURIComponent(JSON.stringify({ url: relay.url, certHash: relay.certHash, count: COUNT }))}`);
        await tab.waitForFunction(() => ((window as unknown as { seen?: number[] }).seen?.length ?? 0) >= 300, undefined, { timeout: 20_000, polling: 5 });
        relay.cut();
        await tab.waitForFunction(() => (window as unknown as { result?: unknown }).result !== undefined, undefined, { timeout: 45_000 });
        const result = (await tab.evaluate(() => (window as unknown as { result: unknown }).result)) as Record<string, unknown>;
        // On a failure, how far the page got and what it heard say where the call was lost.
        expect(result, `${JSON.stringify(result)}\nthe server's log:\n${serverLog.lines.map((line) => JSON.stringify(line)).join('\n')}`).not.toHaveProperty('error');
        expect(result['seen']).toEqual(Array.from({ length: COUNT }, (_, n) => n));
        expect(result['events']).toEqual(['reconnecting', 'resumed']);
        await until(() => fx.server.resumable.size === 0, 'the server forgot the call');
      } finally {
        await tab?.close();
        await relay.stop();
      }
    });
  }
});
