import { createHash } from 'node:crypto';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumMissing, hasChromium, launchChromium } from '../support/browser.js';
import { CraftedArchiveServer } from '../support/crafted-archive-server.js';
import { craftedTar } from '../support/crafted-tar.js';
import { skipTitle } from '../support/skip.js';

/**
 * The Lab's copy panel in headless Chromium against a server that changes a byte (a
 * compromised agent, a proxy that rewrites): the page checks each copy's end against
 * what it holds or sent, itself (docs/security.md "The Lab's copies"), so a download
 * whose bytes are not the ones the end names is refused and never offered to save, and
 * an upload whose end names other bytes is refused. (lab-copy.test.ts shows the same
 * checks passing against an honest server; only here can they fail.)
 */
describe.skipIf(!hasChromium)(skipTitle("the Lab's copy panel refuses a copy whose end names other bytes", chromiumMissing), () => {
  let crafted: CraftedArchiveServer;
  let browser: Browser;
  let page: Page;

  const tar = craftedTar([{ path: 'f', type: 'File', body: 'the bytes the server says it sent\n' }]);
  const sha256 = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');

  /** The status line once it leaves "…ing". */
  const settled = async (): Promise<string> => {
    await page.waitForFunction(() => /^(Uploaded|Downloaded|[A-Z_]+:|the copy)/.test(document.getElementById('copy-status')?.textContent ?? ''));
    return (await page.textContent('#copy-status')) ?? '';
  };

  beforeAll(async () => {
    crafted = await CraftedArchiveServer.start();
    // One byte of the body changed on the way; the end still names the bytes as sent.
    const changed = Buffer.from(tar);
    changed.writeUInt8(changed.readUInt8(520) ^ 0x20, 520);
    crafted.serve('changed', {
      items: async function* () {
        yield { stat: { name: 'f', size: 34, mode: 0o644, mtime: '2026-01-01T00:00:00Z', linkTarget: '' } };
        yield { data: changed };
        yield { terminal: true as const, bytes: tar.byteLength, sha256: sha256(tar) };
      },
    });
    crafted.serve('put-changed', {
      putAnswer: async function* (received) {
        yield { terminal: true as const, bytes: received.bytes, sha256: '0'.repeat(64) };
      },
    });
    browser = await launchChromium();
    page = await browser.newPage();
    await page.goto(crafted.wsUrl.replace('ws://', 'http://').replace(/\/callwire$/, '/'));
    await page.click('nav button[data-op="docker/container/archive/get"]');
    await page.waitForSelector('#copy:not([hidden])');
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await crafted?.close();
  });

  it('a download with a byte changed, its count right: refused on its sha256, nothing offered to save', async () => {
    await page.fill('#copy-container', 'changed');
    await page.fill('#copy-path', '/f');
    await page.click('#copy-download');
    expect(await settled()).toMatch(new RegExp(`^the copy does not match its terminal frame: sha256 [0-9a-f]{64} here, ${sha256(tar)} there$`));
    expect(await page.isHidden('#copy-save')).toBe(true);
  });

  it('an upload whose end names another sha256: refused', async () => {
    await page.fill('#copy-container', 'put-changed');
    await page.setInputFiles('#copy-file', { name: 'up.txt', mimeType: 'text/plain', buffer: Buffer.from('uploaded\n') });
    await page.fill('#copy-dir', '/tmp/');
    await page.click('#copy-upload');
    expect(await settled()).toMatch(new RegExp(`^the copy does not match its terminal frame: sha256 [0-9a-f]{64} here, ${'0'.repeat(64)} there$`));
  });
});
