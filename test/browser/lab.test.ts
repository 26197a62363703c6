import { mkdirSync, readFileSync } from 'node:fs';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hasChromium, launchChromium } from '../support/browser.js';
import { DockerFixture } from '../support/docker.js';
import { parseEnvelope } from '../support/envelope-schema.js';
import { ServerFixture } from '../support/server-fixture.js';

const ARTIFACTS = 'test-artifacts';

/**
 * The Lab as a person uses it, in headless Chromium against `callwire serve`'s
 * page: discover, fill a generated form, run a unary call and an interactive exec,
 * cancel by editing, export the terminal JSON. Screenshots go to test-artifacts/.
 */
describe.skipIf(!hasChromium)('the Lab in Chromium', () => {
  const docker = new DockerFixture();
  const fx = new ServerFixture();
  let browser: Browser;
  let page: Page;
  let base = '';
  let c = '';

  const shot = (name: string): Promise<Buffer> => page.screenshot({ path: `${ARTIFACTS}/lab-${name}.png`, fullPage: true });
  const open = async (op: string): Promise<void> => {
    const views = await page.evaluate(() => Number(document.body.dataset['views'] ?? 0));
    await page.click(`nav button[data-op="${op}"]`);
    await page.waitForFunction((before) => Number(document.body.dataset['views'] ?? 0) > before, views);
  };
  const result = async (field: string): Promise<string> => (await page.textContent(`#result dd[data-field="${field}"]`)) ?? '';

  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    await fx.start({ docker: docker.engine, webTransportPort: false });
    base = fx.server.wsUrl.replace('ws://', 'http://').replace(/\/callwire$/, '/');
    c = await docker.container();
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
    await page.goto(base);
  });
  afterAll(async () => {
    await browser?.close();
    await fx.stop();
    await docker.cleanup();
  });

  it('discovers the operations and shows one: description, kind, declared errors and scopes', async () => {
    await page.waitForSelector('nav button[data-op="docker/container/exec"]');
    const names = await page.$$eval('nav button', (buttons) => buttons.map((b) => (b as HTMLElement).dataset['op']));
    expect(names).toEqual(expect.arrayContaining(['services/list', 'services/schema', 'docker/container/exec', 'docker/container/inspect']));
    await open('docker/container/exec');
    expect(await page.textContent('#op-meta')).toMatch(/^subscription/);
    expect(await page.textContent('#op-description')).toMatch(/docker exec/);
    expect(await page.textContent('#op-error-list')).toMatch(/CONTAINER_NOT_FOUND \(404\)/);
    expect(await page.textContent('#op-scopes')).toBe('Scopes: container:exec');
  });

  it('a generated form: fields with validation messages, and the raw JSON view of the same value', async () => {
    await open('docker/container/exec');
    await page.fill('#field-containerId', '');
    await page.fill('#field-cmd', '');
    await page.click('#run');
    expect(await page.textContent('#input-error')).toMatch(/^Fix the input first: containerId: required/);
    expect(await page.textContent('#field-cmd + .message, #field-cmd ~ .message')).toBe('required');
    await page.fill('#field-containerId', c);
    await page.fill('#field-cmd', 'echo\nhi');
    await page.check('#raw-toggle');
    expect(JSON.parse(await page.inputValue('#raw-input'))).toEqual({ containerId: c, cmd: ['echo', 'hi'] });
    await page.uncheck('#raw-toggle');
  });

  it('runs a unary call and shows its outcome; Export terminal JSON saves the envelope the schema describes', async () => {
    await open('services/schema');
    await page.fill('#field-name', 'services/list');
    await page.click('#run');
    await page.waitForSelector('#result:not([hidden])');
    expect(await result('outcome')).toBe('success');
    expect(await result('exit code')).toBe('0');
    expect(await result('output')).toContain('"name": "services/list"');
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#export')]);
    const saved = parseEnvelope(readFileSync((await download.path())!, 'utf8'));
    expect(saved).toMatchObject({ kind: 'callwire.terminal', command: 'call', outcome: 'success', exit_code: 0, operation: 'services/schema', output: { name: 'services/list' } });
    expect(saved['call_id']).toBe(await result('call id'));
    await shot('unary');

    // A new run that fails replaces the old success at once.
    await page.fill('#field-name', 'no/such-operation');
    expect(await page.isHidden('#result')).toBe(true);
    await page.click('#run');
    await page.waitForSelector('#result:not([hidden])');
    expect(await result('outcome')).toBe('unsupported');
    expect(await page.textContent('#diagnostics')).toMatch(/no\/such-operation/);
  });

  it('an exec on a real terminal: keys typed reach the shell, its output and exit code come back', async () => {
    await open('docker/container/exec');
    await page.fill('#field-containerId', c);
    await page.fill('#field-cmd', 'sh');
    await page.click('#run');
    await page.waitForFunction(() => document.querySelector('#terminal .xterm-rows')?.textContent?.includes('#'));
    await page.click('#terminal');
    await page.keyboard.type('echo $((6*7))\n');
    await page.waitForFunction(() => /^42\s*$/m.test(Array.from(document.querySelectorAll('#terminal .xterm-rows > div')).map((d) => d.textContent).join('\n')));
    await shot('exec');
    await page.keyboard.type('exit 3\n');
    await page.waitForSelector('#result:not([hidden])');
    expect(await result('outcome')).toBe('operation_failure');
    expect(await result('exit code')).toBe('3');
    expect(await result('bytes')).toMatch(/^stdout \d+, stderr 0$/);
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#export')]);
    expect(parseEnvelope(readFileSync((await download.path())!, 'utf8'))).toMatchObject({ command: 'exec', exit_code: 3, exec: { exit_code: 3, stderr_bytes: 0 } });
    await shot('exec-done');
  });

  it('editing the request cancels the running exec: its process is killed and no result stays on screen', async () => {
    await open('docker/container/exec');
    await page.fill('#field-containerId', c);
    await page.fill('#field-cmd', 'sleep\n1003');
    await page.click('#run');
    await expect.poll(() => docker.processes(c), { timeout: 10_000 }).toContain('sleep 1003');
    await page.type('#field-cmd', '9');
    expect(await page.textContent('#input-error')).toBe('Cancelled: the request was edited.');
    await expect.poll(() => docker.processes(c), { timeout: 5000 }).toEqual(['sleep 1000000']);
    expect(await page.isHidden('#result')).toBe(true);
    expect(await page.isDisabled('#cancel')).toBe(true);
  });

  it('a server with tokens: the Lab asks for one, keeps it for the tab only, and never puts it in a URL', async () => {
    const guarded = new ServerFixture();
    await guarded.start({ webTransportPort: false, tokens: [{ token: 'lab-token-0123456789abcdef', subject: 'lab', scopes: ['*'] }] });
    const tab = await browser.newPage();
    try {
      await tab.goto(guarded.server.wsUrl.replace('ws://', 'http://').replace(/\/callwire$/, '/'));
      await tab.waitForSelector('#token-form:not([hidden])');
      expect(await tab.textContent('#connection')).toBe('this server needs a token');
      await tab.fill('#token', 'lab-token-0123456789abcdef');
      await Promise.all([tab.waitForNavigation(), tab.click('#token-form button')]);
      await tab.waitForSelector('nav button[data-op="services/list"]');
      expect(await tab.textContent('#connection')).toMatch(/with a token$/);
      expect(tab.url()).not.toContain('lab-token');
      expect(await tab.evaluate(() => [sessionStorage.getItem('callwire.token'), localStorage.length])).toEqual(['lab-token-0123456789abcdef', 0]);
    } finally {
      await tab.close();
      await guarded.stop();
    }
  });
});
