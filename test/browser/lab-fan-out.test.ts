import { mkdirSync } from 'node:fs';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumMissing, hasChromium, launchChromium } from '../support/browser.js';
import { DockerFixture, RUN_LABEL, TEST_IMAGE } from '../support/docker.js';
import { ServerFixture } from '../support/server-fixture.js';
import { skipTitle } from '../support/skip.js';

const ARTIFACTS = 'test-artifacts';

/**
 * The Lab's fan-out panel in headless Chromium (issue 35 item 4): a label, a command,
 * Run, and a table that fills with one row per target, its state, exit code and last
 * output lines, from docker/container/exec-many over the Lab's WebSocket. The page
 * runs under its CSP: no console error, no violation.
 */
describe.skipIf(!hasChromium)(skipTitle('the Lab\'s fan-out panel in Chromium', chromiumMissing), () => {
  const docker = new DockerFixture();
  const fx = new ServerFixture();
  const tag = docker.runId.slice(0, 8);
  const names = [0, 1, 2, 3].map((n) => `fw-${tag}-${n}`);
  let browser: Browser;
  let page: Page;
  const problems: string[] = [];

  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    for (const [n, name] of names.entries()) {
      const created = await docker.engine.docker.createContainer({
        name,
        Image: TEST_IMAGE,
        Cmd: ['sleep', '1000000'],
        Env: [`N=${n === 2 ? 5 : 0}`],
        Labels: { [RUN_LABEL]: docker.runId, fanweb: tag },
        HostConfig: { NetworkMode: 'none' },
      });
      await created.start();
    }
    // As another caller's container created through callwire (its ownership labels): the label takes it only with "Any owner".
    const others = await docker.engine.docker.createContainer({
      name: `${tag}-bobs`,
      Image: TEST_IMAGE,
      Cmd: ['sleep', '1000000'],
      Env: ['N=0'],
      Labels: { [RUN_LABEL]: docker.runId, fanweb: tag, 'callwire.managed': 'true', 'callwire.owner': 'bob' },
      HostConfig: { NetworkMode: 'none' },
    });
    await others.start();
    await fx.start({ docker: docker.engine, webTransportPort: false });
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    page.on('console', (m) => void (['error', 'warning'].includes(m.type()) && problems.push(`console ${m.type()}: ${m.text()}`)));
    page.on('pageerror', (e) => void problems.push(`uncaught: ${e.message}`));
    await page.exposeFunction('reportViolation', (v: string) => void problems.push(`CSP violation: ${v}`));
    await page.addInitScript(() => {
      document.addEventListener('securitypolicyviolation', (e) => {
        (window as unknown as { reportViolation(v: string): void }).reportViolation(`${e.violatedDirective} at ${e.sourceFile}:${e.lineNumber}`);
      });
    });
    await page.goto(fx.server.wsUrl.replace('ws://', 'http://').replace(/\/callwire$/, '/'));
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await fx.stop();
    await docker.cleanup();
  });

  it('a label and a command fill the table with one row per target: its state, exit code and last output lines', async () => {
    await page.click('nav button[data-op="docker/container/exec-many"]');
    await page.waitForSelector('#fan-out:not([hidden])');
    expect(await page.isHidden('#operation')).toBe(true);
    await page.fill('#fan-out-labels', `fanweb=${tag}`);
    await page.fill('#fan-out-command', 'echo "line one"; echo "line two"; echo "from $(hostname)"; exit $N');
    await page.click('#fan-out-run');
    await page.waitForFunction(() => /targets:/.test(document.getElementById('fan-out-summary')?.textContent ?? ''));
    const rows = await page.$$eval('#fan-out-rows tr', (trs) =>
      trs.map((tr) => Object.fromEntries(Array.from(tr.querySelectorAll('td')).map((td) => [(td as HTMLElement).dataset['field'], td.textContent]))),
    );
    expect(rows.map((r) => r['target'])).toEqual(names);
    // Made on the engine directly: no owner; bob's is not among them.
    expect(rows.map((r) => r['owner'])).toEqual(names.map(() => '-'));
    expect(rows.map((r) => [r['state'], r['exit']])).toEqual([
      ['exited', '0'],
      ['exited', '0'],
      ['exited', '5'],
      ['exited', '0'],
    ]);
    for (const row of rows) expect(row['output']).toMatch(/^line one\nline two\nfrom [0-9a-f]{12}$/);
    expect(await page.textContent('#fan-out-summary')).toBe(`exit 5 · 4 targets: 3 exit 0, 1 exit 5 (${names[2]}) · 1 container of other owners left out (Any owner takes them)`);
    await page.screenshot({ path: `${ARTIFACTS}/lab-fan-out.png`, fullPage: true });
    expect(problems).toEqual([]);
  });

  it("'Any owner' takes another caller's container too, its owner shown", async () => {
    await page.check('#fan-out-any-owner');
    await page.click('#fan-out-run');
    await page.waitForFunction(() => /targets:/.test(document.getElementById('fan-out-summary')?.textContent ?? ''));
    const rows = await page.$$eval('#fan-out-rows tr', (trs) => trs.map((tr) => [tr.querySelector('[data-field="target"]')?.textContent, tr.querySelector('[data-field="owner"]')?.textContent]));
    expect(rows).toContainEqual([`${tag}-bobs`, 'bob']);
    expect(rows).toHaveLength(5);
    await page.uncheck('#fan-out-any-owner');
  });

  it('a selection that matches nothing says so, with an empty table', async () => {
    await page.fill('#fan-out-labels', `fanweb=${tag}-none`);
    await page.click('#fan-out-run');
    await page.waitForFunction(() => /targets/.test(document.getElementById('fan-out-summary')?.textContent ?? ''));
    expect(await page.$$('#fan-out-rows tr')).toHaveLength(0);
    expect(await page.textContent('#fan-out-summary')).toBe('exit 0 · 0 targets');
  });
});
