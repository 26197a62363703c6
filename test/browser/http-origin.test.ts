import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hasChromium, launchChromium, servePage } from '../support/browser.js';
import { ServerFixture } from '../support/server-fixture.js';

// Runs in the page: the requests a page may send without asking first (CORS "simple"
// requests, here with mode no-cors), which the browser sends and whose answer it hides.
const PAGE_SCRIPT = `
const { call } = JSON.parse(decodeURIComponent(location.hash.slice(1)));
const sent = [];
try {
  // No body: the one simple POST a server that reads JSON or msgpack would take as null input.
  sent.push((await fetch(call, { method: 'POST', mode: 'no-cors' })).type);
  // A text/plain body, as a form or a no-cors fetch may send.
  sent.push((await fetch(call, { method: 'POST', mode: 'no-cors', headers: { 'content-type': 'text/plain' }, body: '{}' })).type);
  window.result = { sent };
} catch (error) {
  window.result = { error: String(error && error.stack || error), sent };
}
`;

const REBOUND = 'rebound.test';

/**
 * A page in a real browser, on another origin than the server's, sending the
 * requests no CORS preflight guards (spec §5.6, §10.1): the browser delivers them
 * and only hides the answer, so the server alone decides whether the call runs.
 * A rebinding page is same-origin with the server under its own name: only Host
 * stops it. `test/secret` (which needs every scope, held by a loopback caller) counts its runs.
 */
describe.skipIf(!hasChromium)(`POST /call/ from pages of other origins, and from a rebinding page, in Chromium${hasChromium ? '' : ' (skipped: no /usr/bin/chromium; .ci/run installs it)'}`, () => {
  const fx = new ServerFixture();
  let page: Server;
  let otherPage: Server;
  let browser: Browser;
  let pageUrl = '';
  let otherPageUrl = '';
  let call = '';

  beforeAll(async () => {
    const served = await servePage(PAGE_SCRIPT, '');
    page = served.server;
    pageUrl = served.url;
    // The same page on an origin the server does not list.
    otherPage = createServer(served.handler);
    await new Promise<void>((resolve) => otherPage.listen(0, '127.0.0.1', resolve));
    otherPageUrl = `http://localhost:${(otherPage.address() as AddressInfo).port}/`;
    await fx.start({ webTransportPort: false, allowOrigins: [new URL(pageUrl).origin] });
    call = `${fx.server.wsUrl.replace('ws://', 'http://').replace(/\/callwire$/, '')}/call/test/secret`;
    // A rebinding DNS, played by the browser's resolver: the attacker's name now points at loopback.
    browser = await launchChromium([`--host-resolver-rules=MAP ${REBOUND} 127.0.0.1`]);
  });
  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => page?.close(resolve));
    await new Promise((resolve) => otherPage?.close(resolve));
    await fx.stop();
  });

  async function runPage(url: string): Promise<{ sent?: string[]; error?: string }> {
    const tab = await browser.newPage();
    try {
      await tab.goto(`${url}#${encodeURIComponent(JSON.stringify({ call }))}`);
      await tab.waitForFunction(() => (window as unknown as { result?: unknown }).result !== undefined, undefined, { timeout: 20_000 });
      return (await tab.evaluate(() => (window as unknown as { result: unknown }).result)) as { sent?: string[]; error?: string };
    } finally {
      await tab.close();
    }
  }

  it('a page of a foreign origin: both requests reach the server and are answered, and the operation never runs', async () => {
    const before = fx.probe.started;
    const result = await runPage(otherPageUrl);
    expect(result.error).toBeUndefined();
    // An opaque answer: the server did answer (the browser hides what), so the request was not blocked on the way.
    expect(result.sent).toEqual(['opaque', 'opaque']);
    expect(fx.probe.started).toBe(before);
  });

  it('the same page on an allowed origin runs it once (the body-less one): the requests do reach the operation', async () => {
    const before = fx.probe.started;
    const result = await runPage(pageUrl);
    expect(result.error).toBeUndefined();
    expect(result.sent).toEqual(['opaque', 'opaque']);
    // text/plain is not a type the server reads (415), from any origin.
    expect(fx.probe.started).toBe(before + 1);
  });

  it('a DNS-rebinding page, same-origin with the server under its own name, is refused by Host and runs nothing', async () => {
    const before = fx.probe.started;
    const port = new URL(fx.server.wsUrl).port;
    const tab = await browser.newPage();
    try {
      // Whatever the server answers here, the tab now holds a document of http://rebound.test:<port>.
      await tab.goto(`http://${REBOUND}:${port}/`);
      const answer = await tab.evaluate(async () => {
        // Same origin: the browser sends it as is and lets the page read the answer.
        const response = await fetch('/call/test/secret', { method: 'POST' });
        return { status: response.status, body: await response.text() };
      });
      expect(answer.status).toBe(403);
      expect(JSON.parse(answer.body)).toMatchObject({ outcome: 'forbidden', diagnostics: [{ code: 'FORBIDDEN', message: expect.stringMatching(/Host "rebound\.test" is not a loopback name/) }] });
    } finally {
      await tab.close();
    }
    expect(fx.probe.started).toBe(before);
  });
});
