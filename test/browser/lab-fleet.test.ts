import { mkdirSync } from 'node:fs';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumMissing, hasChromium, launchChromium } from '../support/browser.js';
import { DockerFixture, RUN_LABEL, TEST_IMAGE } from '../support/docker.js';
import { Fleet, type GatewayRun } from '../support/fleet.js';
import { ServerFixture } from '../support/server-fixture.js';
import { skipTitle } from '../support/skip.js';

const ARTIFACTS = 'test-artifacts';

/**
 * The Lab of a fleet gateway (docs/fleet.md "Addressing"), in headless Chromium: its hosts
 * panel comes from services/info's `fleet.hosts` and follows a host that goes down, and
 * its exec form takes HOST/NAME. A NATS node, two agents on this machine's engine (hosts
 * lab-a and lab-b: the same containers, so a name is ambiguous and HOST/NAME picks one),
 * and the gateway, each a process with its own NATS user.
 */
describe.skipIf(!hasChromium)(skipTitle('the Lab of a fleet gateway in Chromium', chromiumMissing), () => {
  const docker = new DockerFixture();
  let fleet: Fleet | undefined;
  let gateway: GatewayRun;
  let browser: Browser;
  let page: Page;
  const name = `lab-fleet-${docker.runId.slice(0, 8)}`;

  const shot = (what: string): Promise<Buffer> => page.screenshot({ path: `${ARTIFACTS}/lab-fleet-${what}.png`, fullPage: true });
  /** The names of the containers the engine started or saw stop from `since` (epoch seconds) until now, from its event log. */
  const ranSince = async (since: number): Promise<string[]> => {
    const until = Math.ceil(Date.now() / 1000) + 1;
    const stream = await docker.engine.docker.getEvents({ since, until, filters: { type: ['container'], event: ['start', 'die'] } });
    let text = '';
    for await (const chunk of stream as AsyncIterable<Buffer>) text += chunk.toString('utf8');
    return text.split('\n').filter(Boolean).map((line) => (JSON.parse(line) as { Actor: { Attributes: { name: string } } }).Actor.Attributes.name);
  };
  const cell = (host: string, field: string): Promise<string | null> => page.textContent(`#hosts tr[data-host="${host}"] td[data-field="${field}"]`);

  /** When the fleet's agents began to watch the engine (epoch seconds). */
  let watchedSince = 0;

  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    watchedSince = Math.floor(Date.now() / 1000) - 1;
    await docker.engine.docker.createContainer({ name, Image: TEST_IMAGE, Cmd: ['sleep', '1000000'], Labels: { [RUN_LABEL]: docker.runId }, HostConfig: { NetworkMode: 'none' } }).then((c) => c.start());
    fleet = await Fleet.start({ hosts: ['lab-a', 'lab-b'], nodes: 1 });
    for (const host of ['lab-a', 'lab-b']) await fleet.agent(host);
    gateway = await fleet.gateway({ waitHosts: ['lab-a', 'lab-b'] });
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await page.goto(gateway.wsUrl.replace('ws://', 'http://').replace(/\/callwire$/, '/'));
  });
  afterAll(async () => {
    await browser?.close();
    await fleet?.stop();
    await docker.cleanup();
  });

  it('shows the hosts services/info names: id, state, containers and last seen, in the order it gives them', async () => {
    await page.waitForSelector('#hosts tbody tr');
    expect(await page.isVisible('#hosts')).toBe(true);
    expect(await page.$$eval('#hosts tbody tr', (rows) => rows.map((r) => (r as HTMLElement).dataset['host']))).toEqual(['lab-a', 'lab-b']);
    for (const host of ['lab-a', 'lab-b']) {
      expect(await cell(host, 'id')).toBe(host);
      expect(await cell(host, 'state')).toBe('up');
      // The engine is shared with other tests: its container count moves, but it holds ours.
      expect(Number(await cell(host, 'containers'))).toBeGreaterThan(0);
      expect(await cell(host, 'seen')).toMatch(/^(now|\d+ s ago)$/);
    }
    expect(await page.isHidden('#hosts .hosts-empty')).toBe(true);
    await shot('hosts');
  });

  it('the exec form takes HOST/NAME: its example is a container that runs on a host of the fleet, and a run on lab-a/NAME comes back', async () => {
    const views = await page.evaluate(() => Number(document.body.dataset['views'] ?? 0));
    // Files beside this one start and remove containers on the same engine: the example may be
    // one of theirs, gone again by the click, as a host's table is as old as its last beat. It
    // ran while the fleet watched: running before the click, or by the engine's own account
    // started or stopped since the agents began.
    const runningNames = async (): Promise<string[]> => (await docker.engine.docker.listContainers()).flatMap((c) => c.Names.map((n) => n.slice(1)));
    const before = await runningNames();
    await page.click('#try-exec');
    await page.waitForFunction((before) => Number(document.body.dataset['views'] ?? 0) > before, views);
    // No demo container here (a fleet made by hand): the example is one that runs, as HOST/NAME.
    const example = await page.inputValue('#field-containerId');
    expect(example).toMatch(/^lab-[ab]\/[\w.-]+$/);
    expect(await page.textContent('#demo-name')).toBe(example);
    expect([...before, ...(await ranSince(watchedSince))]).toContain(example.split('/')[1]);
    await page.fill('#field-containerId', `lab-a/${name}`);
    await page.fill('#field-cmd', 'sh\n-c\necho fleet-$((6*7))');
    await page.click('#run');
    await page.waitForSelector('#result:not([hidden])');
    expect(await page.textContent('#result dd[data-field="outcome"]')).toBe('success');
    expect(await page.textContent('#terminal .xterm-rows')).toContain('fleet-42');
    await shot('exec');
    // The bare name is on both hosts: the gateway refuses it and names the candidates.
    await page.fill('#field-containerId', name);
    await page.click('#run');
    await page.waitForSelector('#result:not([hidden])');
    expect(await page.textContent('#diagnostics')).toContain(`ambiguous in the fleet: name it as one of lab-a/${name}, lab-b/${name}`);
  });

  it('a host whose agent stops turns down in the panel without a reload', async () => {
    const agent = fleet!.agents.get('lab-b')!;
    agent.child.kill('SIGTERM');
    await agent.exited;
    // Down after 3 missed beats; the panel asks services/info again every 5 s.
    await page.waitForFunction(() => document.querySelector('#hosts tr[data-host="lab-b"] td[data-field="state"]')?.textContent === 'down', undefined, { timeout: 20_000 });
    expect(await page.getAttribute('#hosts tr[data-host="lab-b"] td[data-field="state"]', 'class')).toBe('host-down');
    expect(await cell('lab-a', 'state')).toBe('up');
    await shot('host-down');
  });

  it('a server that is no gateway has no hosts panel', async () => {
    const single = new ServerFixture();
    await single.start({ webTransportPort: false });
    const tab = await browser.newPage();
    try {
      await tab.goto(single.server.wsUrl.replace('ws://', 'http://').replace(/\/callwire$/, '/'));
      await tab.waitForSelector('nav button[data-op="services/info"]');
      expect(await tab.isHidden('#hosts')).toBe(true);
    } finally {
      await tab.close();
      await single.stop();
    }
  });
});
