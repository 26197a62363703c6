import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundleClient, hasChromium, launchChromium, servePage } from '../support/browser.js';
import { DockerFixture } from '../support/docker.js';
import { ServerFixture } from '../support/server-fixture.js';

// Runs in the page, as plain browser JavaScript (the test only reads window.result).
const PAGE_SCRIPT = `
import { connect, exec } from '/client.js';
const { url, token, codec, container } = JSON.parse(decodeURIComponent(location.hash.slice(1)));
if (container) {
  // Interactive exec from the page: a terminal, resized, typed into; then stdin from a web stream.
  try {
    const client = await connect(url, { codec });
    const shell = exec(client, container, ['sh', '-c', 'read x; stty size; echo "got $x"'], { stdin: 'pipe', tty: { cols: 50, rows: 10 } });
    let screen = '';
    shell.output.subscribe((f) => (screen += f.stream + ':' + f.text + '|'));
    shell.resize(77, 33);
    await shell.stdin.write('hello\\r');
    const { exitCode } = await shell.result;
    const wc = exec(client, container, ['wc', '-c'], { stdin: new Blob(['12345']).stream() });
    let counted = '';
    wc.output.subscribe((f) => (counted += f.text));
    await wc.result;
    await client.close();
    window.result = { screen, exitCode, counted: counted.trim() };
  } catch (error) {
    window.result = { error: String(error && error.stack || error) };
  }
} else try {
  const client = await connect(url, { token, codec });
  const ops = (await client.listOperations()).map((o) => o.name);
  const echo = await client.call('test/echo', { text: 'from the browser ✓' });
  const secret = await client.call('test/secret', null);
  const items = [];
  for await (const item of client.iterate('test/ticker', { count: 3, intervalMs: 1 })) items.push(item.n);
  const upload = await client.call('test/upload', { data: new Uint8Array([1, 2, 3, 250]) });
  const failure = await client.call('test/fail', { mode: 'declared' }).catch((e) => ({ code: e.code, details: e.details }));
  await client.close();
  window.result = { ops, echo, secret, items, upload, failure, hasNodeBuffer: typeof globalThis.Buffer !== 'undefined' };
} catch (error) {
  window.result = { error: String(error && error.stack || error) };
}
`;
const TOKEN = 'browser-token-0123456789abcdef';

/**
 * The client SDK's WebSocket path in a real browser: bundled for the browser
 * platform with Node-only modules left out, run in headless Chromium against a real
 * server. The browser cannot set headers, so its token rides in each call.
 */
describe.skipIf(!hasChromium)(`the client in a browser${hasChromium ? '' : ' (skipped: no /usr/bin/chromium; .ci/run installs it)'}`, () => {
  const fx = new ServerFixture();
  const docker = new DockerFixture();
  const dockerFx = new ServerFixture();
  let containerId = '';
  let page: Server;
  let otherPage: Server;
  let browser: Browser;
  let pageUrl = '';
  let otherPageUrl = '';

  beforeAll(async () => {
    const served = await servePage(PAGE_SCRIPT, await bundleClient());
    page = served.server;
    pageUrl = served.url;
    // The same page under another origin, one the server does not list (spec §10.1).
    otherPage = createServer(served.handler);
    await new Promise<void>((resolve) => otherPage.listen(0, '127.0.0.1', resolve));
    otherPageUrl = `http://localhost:${(otherPage.address() as AddressInfo).port}/`;
    await fx.start({
      webTransportPort: false,
      tokens: [{ token: TOKEN, subject: 'browser', scopes: ['secret:read', 'secret:write'] }],
      allowOrigins: [new URL(pageUrl).origin],
    });
    await dockerFx.start({ webTransportPort: false, docker: docker.engine, allowOrigins: [new URL(pageUrl).origin] });
    containerId = await docker.container();
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => page?.close(resolve));
    await new Promise((resolve) => otherPage?.close(resolve));
    await fx.stop();
    await dockerFx.stop();
    await docker.cleanup();
  });

  for (const codec of ['msgpack', 'json'] as const) {
    it(`calls, streams, authenticates per call and moves bytes (${codec})`, async () => {
      const tab = await browser.newPage();
      await tab.goto(`${pageUrl}#${encodeURIComponent(JSON.stringify({ url: fx.server.wsUrl, token: TOKEN, codec }))}`);
      await tab.waitForFunction(() => (window as unknown as { result?: unknown }).result !== undefined, undefined, { timeout: 20_000 });
      const result = (await tab.evaluate(() => (window as unknown as { result: unknown }).result)) as Record<string, unknown>;
      expect(result['error']).toBeUndefined();
      expect(result.hasNodeBuffer).toBe(false);
      expect(result.ops).toContain('test/echo');
      expect(result.echo).toEqual({ text: 'from the browser ✓' });
      expect(result.secret).toBe('classified');
      expect(result.items).toEqual([0, 1, 2]);
      expect(result.upload).toEqual({ bytes: 4 });
      expect(result.failure).toEqual({ code: 'WIDGET_MISSING', details: { widget: 'w1' } });
      await tab.close();
    });
  }

  it('an interactive exec from the page: a tty resized and typed into, then stdin from a web ReadableStream', async () => {
    const tab = await browser.newPage();
    await tab.goto(`${pageUrl}#${encodeURIComponent(JSON.stringify({ url: dockerFx.server.wsUrl, codec: 'msgpack', container: containerId }))}`);
    await tab.waitForFunction(() => (window as unknown as { result?: unknown }).result !== undefined, undefined, { timeout: 20_000 });
    const result = (await tab.evaluate(() => (window as unknown as { result: unknown }).result)) as Record<string, unknown>;
    expect(result['error']).toBeUndefined();
    // The terminal echoes the typed line, then the new size, then the shell's answer; all of it as stdout.
    const screen = String(result['screen']);
    expect(screen.split('|').filter(Boolean).every((f) => f.startsWith('stdout:'))).toBe(true);
    expect(screen.replace(/(^|\|)stdout:/g, '')).toBe('hello\r\n33 77\r\ngot hello\r\n|');
    expect(result['exitCode']).toBe(0);
    expect(result['counted']).toBe('5');
    await tab.close();
  });

  it('a page from an origin the server does not allow cannot call anything', async () => {
    const tab = await browser.newPage();
    await tab.goto(`${otherPageUrl}#${encodeURIComponent(JSON.stringify({ url: fx.server.wsUrl, token: TOKEN, codec: 'msgpack' }))}`);
    await tab.waitForFunction(() => (window as unknown as { result?: unknown }).result !== undefined, undefined, { timeout: 20_000 });
    const result = (await tab.evaluate(() => (window as unknown as { result: unknown }).result)) as Record<string, unknown>;
    expect(result['error']).toMatch(/UNAVAILABLE|connect|closed/i);
    expect(result['ops']).toBeUndefined();
    // Refused at the upgrade: no session was ever opened for it.
    expect([...fx.server.connections()]).toHaveLength(0);
    await tab.close();
  });
});
