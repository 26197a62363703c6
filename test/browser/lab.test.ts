import { mkdirSync, readFileSync } from 'node:fs';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FOLD_AFTER_LINES } from '../../src/lab/json-view.js';
import { chromiumMissing, hasChromium, launchChromium } from '../support/browser.js';
import { DEMO, demoContainer } from '../../scripts/demo-container.mjs';
import { DockerFixture } from '../support/docker.js';
import { parseResultRecord } from '../support/result-record-schema.js';
import { ServerFixture } from '../support/server-fixture.js';
import { skipTitle } from '../support/skip.js';

const ARTIFACTS = 'test-artifacts';

/**
 * The Lab as a person uses it, in headless Chromium against `callwire serve`'s
 * page: discover, fill a generated form, run a unary call and an interactive exec,
 * cancel by editing, export the result JSON. Screenshots go to test-artifacts/.
 * The page runs under its CSP throughout: no console error, no violation.
 */
describe.skipIf(!hasChromium)(skipTitle('the Lab in Chromium', chromiumMissing), () => {
  const docker = new DockerFixture();
  const fx = new ServerFixture();
  let browser: Browser;
  let page: Page;
  let base = '';
  let c = '';
  /** Console errors and warnings, uncaught errors and CSP violations, over every load of the page. */
  const problems: string[] = [];

  const shot = (name: string): Promise<Buffer> => page.screenshot({ path: `${ARTIFACTS}/lab-${name}.png`, fullPage: true });
  /** Clicks `selector` and waits for the operation's view it opens. */
  const openBy = async (selector: string): Promise<void> => {
    const views = await page.evaluate(() => Number(document.body.dataset['views'] ?? 0));
    await page.click(selector);
    await page.waitForFunction((before) => Number(document.body.dataset['views'] ?? 0) > before, views);
  };
  const open = (op: string): Promise<void> => openBy(`nav button[data-op="${op}"]`);
  const run = async (): Promise<void> => {
    await page.click('#run');
    await page.waitForSelector('#result:not([hidden])');
  };
  /** Whether the top of the result is inside the window, as a person sees the page. */
  const resultInView = (): Promise<boolean> =>
    page.$eval('#result', (el) => {
      const top = el.getBoundingClientRect().top;
      return top >= 0 && top < window.innerHeight;
    });
  const result = async (field: string): Promise<string> => (await page.textContent(`#result dd[data-field="${field}"]`)) ?? '';

  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    await fx.start({ docker: docker.engine, webTransportPort: false });
    base = fx.server.wsUrl.replace('ws://', 'http://').replace(/\/callwire$/, '/');
    c = await docker.container();
    // The arrival hint opens exec on the demo container where it runs: made here (as `npm start`
    // makes it), not left to whichever file ran first.
    expect(await demoContainer(docker.engine.docker)).toMatch(DEMO);
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
    page.on('console', (m) => void (['error', 'warning'].includes(m.type()) && problems.push(`console ${m.type()}: ${m.text()}`)));
    page.on('pageerror', (e) => void problems.push(`uncaught: ${e.message}`));
    await page.exposeFunction('reportViolation', (v: string) => void problems.push(`CSP violation: ${v}`));
    await page.addInitScript(() => {
      document.addEventListener('securitypolicyviolation', (e) => {
        (window as unknown as { reportViolation(v: string): void }).reportViolation(`${e.violatedDirective} at ${e.sourceFile}:${e.lineNumber}:${e.columnNumber}`);
      });
    });
    await page.goto(base);
  });
  afterAll(async () => {
    await browser?.close();
    await fx.stop();
    await docker.cleanup();
  });

  it('on arrival, a hint instead of a blank pane: pick an operation, or open exec on the demo container', async () => {
    await page.waitForSelector('nav button[data-op="docker/container/exec"]');
    expect(await page.isVisible('#welcome')).toBe(true);
    expect(await page.textContent('#welcome h2')).toBe('Pick an operation on the left');
    expect(await page.isVisible('#try-exec')).toBe(true);
    await shot('arrival');
    await openBy('#try-exec');
    expect(await page.isHidden('#welcome')).toBe(true);
    expect(await page.textContent('#op-name')).toBe('docker/container/exec');
    expect(await page.inputValue('#field-containerId')).toBe('callwire-demo');
    expect(await page.inputValue('#field-cmd')).toBe('sh');
  });

  it('discovers the operations and shows one: description, kind, declared errors and scopes', async () => {
    const names = await page.$$eval('nav button', (buttons) => buttons.map((b) => (b as HTMLElement).dataset['op']));
    expect(names).toEqual(expect.arrayContaining(['services/list', 'services/schema', 'docker/container/exec', 'docker/container/inspect']));
    await open('docker/container/exec');
    expect(await page.textContent('#op-meta')).toMatch(/^subscription/);
    // What it does in one plain sentence; formats and the kill's edge cases fold away.
    expect(await page.textContent('#op-description')).toMatch(/^Runs a command in a running container, like docker exec/);
    expect(await page.textContent('#op-description')).not.toMatch(/[{}]|CALLWIRE_EXEC/);
    expect(await page.isVisible('#op-more summary')).toBe(true);
    expect(await page.isVisible('#op-more-text')).toBe(false);
    expect(await page.textContent('#op-more-text')).toMatch(/terminal: true[\s\S]*CALLWIRE_EXEC[\s\S]*services\/stats/);
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

  it('runs a unary call and shows its outcome; Export result JSON saves the result record the schema describes', async () => {
    await open('services/schema');
    await page.fill('#field-name', 'services/list');
    await page.click('#run');
    await page.waitForSelector('#result:not([hidden])');
    expect(await result('outcome')).toBe('success');
    expect(await result('exit code')).toBe('0');
    expect(await result('output')).toContain('"name": "services/list"');
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#export')]);
    const saved = parseResultRecord(readFileSync((await download.path())!, 'utf8'));
    expect(saved).toMatchObject({ kind: 'callwire.terminal', command: 'call', outcome: 'success', exit_code: 0, operation: 'services/schema', output: { name: 'services/list' } });
    expect(saved['call_id']).toBe(await result('call id'));
    // The output as indented JSON, its lines as the page renders them; past FOLD_AFTER_LINES, folded.
    const pretty = JSON.stringify(saved['output'], null, 2).split('\n');
    expect(pretty.length).toBeGreaterThan(FOLD_AFTER_LINES);
    const shown = async (): Promise<string[]> => (await page.$eval('#result dd[data-field="output"]', (dd) => (dd as HTMLElement).innerText)).split('\n');
    expect(await shown()).toEqual([...pretty.slice(0, FOLD_AFTER_LINES), `${pretty.length - FOLD_AFTER_LINES} more lines`]);
    await shot('unary');
    await page.click('#result dd[data-field="output"] summary');
    expect((await shown()).filter((line) => !/^\d+ more lines$/.test(line))).toEqual(pretty);

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
    // Under the form and the terminal, the result is scrolled into view.
    expect(await resultInView()).toBe(true);
    expect(await result('outcome')).toBe('operation_failure');
    expect(await result('exit code')).toBe('3');
    expect(await result('bytes')).toMatch(/^stdout \d+, stderr 0$/);
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#export')]);
    expect(parseResultRecord(readFileSync((await download.path())!, 'utf8'))).toMatchObject({ command: 'exec', exit_code: 3, exec: { exit_code: 3, stderr_bytes: 0 } });
    await shot('exec-done');
  });

  it('docker/container/list: a field per property of its input (which may also be null); an unticked box is sent as false', async () => {
    const stopped = await docker.container({}, ['true']);
    await expect.poll(async () => (await docker.engine.docker.getContainer(stopped).inspect()).State.Running, { timeout: 10_000 }).toBe(false);
    await open('docker/container/list');
    expect(await page.$$eval('#input-form input', (inputs) => inputs.map((i) => (i as HTMLInputElement).name))).toEqual(['all', 'owned_only']);
    expect(await page.isChecked('#field-all')).toBe(true);
    expect(await page.isChecked('#field-owned_only')).toBe(false);
    await run();
    expect(await result('output')).toContain(stopped);
    await page.uncheck('#field-all');
    await page.check('#raw-toggle');
    expect(JSON.parse(await page.inputValue('#raw-input'))).toEqual({ all: false, owned_only: false });
    await page.uncheck('#raw-toggle');
    await run();
    expect(await result('outcome')).toBe('success');
    expect(await result('output')).toContain(c);
    expect(await result('output')).not.toContain(stopped);
    await shot('list');
  });

  it('an operation whose input is null says so and runs with null: services/info', async () => {
    await open('services/info');
    expect(await page.textContent('#input-form')).toMatch(/takes no input/);
    await run();
    expect(await result('outcome')).toBe('success');
    expect(await result('output')).toContain('"protocol": "callwire.v1"');
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

  it('the page loaded and ran every call above under its CSP: no console error or warning, no violation', async () => {
    await page.reload();
    await page.waitForSelector('nav button[data-op="services/list"]');
    await open('services/schema');
    await run();
    expect(problems).toEqual([]);
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
