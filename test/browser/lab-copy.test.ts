import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync } from 'node:fs';
import type { Browser, Page } from 'playwright-core';
import { Parser, type ReadEntry } from 'tar';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumMissing, hasChromium, launchChromium } from '../support/browser.js';
import { DockerFixture, dockerCli } from '../support/docker.js';
import { ServerFixture } from '../support/server-fixture.js';
import { skipTitle } from '../support/skip.js';

const ARTIFACTS = 'test-artifacts';

interface TarEntry {
  readonly path: string;
  readonly type: string;
  readonly size: number;
  readonly linkpath: string;
  readonly sha256: string;
}

/** Every entry of a tar stream as node-tar reads it: name, type, size, link target and content. */
async function tarEntries(tar: Buffer): Promise<TarEntry[]> {
  const entries: Promise<TarEntry>[] = [];
  const parser = new Parser({ strict: true });
  parser.on('entry', (entry: ReadEntry) => {
    entries.push(
      new Promise((resolve) => {
        const hash = createHash('sha256');
        entry.on('data', (chunk: Buffer) => hash.update(chunk));
        entry.on('end', () => resolve({ path: entry.path, type: entry.type, size: entry.size ?? -1, linkpath: entry.linkpath ?? '', sha256: hash.digest('hex') }));
      }),
    );
  });
  await new Promise<void>((resolve, reject) => {
    parser.on('end', () => resolve());
    parser.on('error', reject);
    parser.end(tar);
  });
  return Promise.all(entries);
}

const sha256 = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');

/**
 * The Lab's copy panel in headless Chromium against a real `serve` and the real engine
 * (issue 34 item 5): a file chosen or dropped goes into a container as the page's own
 * one-entry tar; a directory comes out as the engine's tar, saved as a download; a
 * missing path shows its error. The page runs under its CSP: no console error, no violation.
 */
describe.skipIf(!hasChromium)(skipTitle('the Lab\'s copy panel in Chromium', chromiumMissing), () => {
  const docker = new DockerFixture();
  const fx = new ServerFixture();
  let browser: Browser;
  let page: Page;
  let c = '';
  const problems: string[] = [];

  const inContainer = async (script: string): Promise<Buffer> => {
    const run = await dockerCli(['exec', c, 'sh', '-c', script]);
    expect(run.code, run.stderr.toString()).toBe(0);
    return run.stdout;
  };
  /** The status line once it leaves "…ing", as a person reads it. */
  const settled = async (): Promise<string> => {
    await page.waitForFunction(() => /^(Uploaded|Downloaded|[A-Z_]+:|a file name|Choose|the copy)/.test(document.getElementById('copy-status')?.textContent ?? ''));
    return (await page.textContent('#copy-status')) ?? '';
  };

  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    await fx.start({ docker: docker.engine, webTransportPort: false });
    c = await docker.container();
    await inContainer('mkdir -p /srv/d/sub /srv/d/empty && printf "hello\\n" > /srv/d/a.txt && head -c 200000 /dev/urandom > /srv/d/sub/b.bin && : > /srv/d/zero && ln -s a.txt /srv/d/link');
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
    page.on('console', (m) => void (['error', 'warning'].includes(m.type()) && problems.push(`console ${m.type()}: ${m.text()}`)));
    page.on('pageerror', (e) => void problems.push(`uncaught: ${e.message}`));
    await page.exposeFunction('reportViolation', (v: string) => void problems.push(`CSP violation: ${v}`));
    await page.addInitScript(() => {
      document.addEventListener('securitypolicyviolation', (e) => {
        (window as unknown as { reportViolation(v: string): void }).reportViolation(`${e.violatedDirective} at ${e.sourceFile}:${e.lineNumber}`);
      });
    });
    await page.goto(fx.server.wsUrl.replace('ws://', 'http://').replace(/\/callwire$/, '/'));
    await page.click('nav button[data-op="docker/container/archive/get"]');
    await page.waitForSelector('#copy:not([hidden])');
    // The running containers are offered by name.
    await page.waitForFunction(() => document.querySelectorAll('#copy-containers option').length > 0);
    await page.fill('#copy-container', c);
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await fx.stop();
    await docker.cleanup();
  });

  it('a chosen file and a dropped one land in the container\'s directory, byte for byte', async () => {
    const chosen = randomBytes(300_000);
    await page.setInputFiles('#copy-file', { name: 'up load.bin', mimeType: 'application/octet-stream', buffer: chosen });
    await page.fill('#copy-dir', '/tmp/');
    await page.click('#copy-upload');
    const said = await settled();
    expect(said).toMatch(new RegExp(`^Uploaded up load\\.bin \\(300000 bytes\\) to ${c}:/tmp/up load\\.bin; sha256 [0-9a-f]{64} checked against the server's\\.$`));
    expect((await inContainer('sha256sum "/tmp/up load.bin"')).toString().split(' ')[0]).toBe(sha256(chosen));
    expect(await page.getAttribute('#copy-progress', 'value')).toBe(await page.getAttribute('#copy-progress', 'max'));

    const dropped = await page.evaluateHandle(() => {
      const transfer = new DataTransfer();
      transfer.items.add(new File(['dropped here\n'], 'dropped.txt'));
      return transfer;
    });
    await page.dispatchEvent('#copy-drop', 'drop', { dataTransfer: dropped });
    expect(await page.textContent('#copy-chosen')).toBe('dropped.txt (13 bytes)');
    await page.click('#copy-upload');
    expect(await settled()).toMatch(/^Uploaded dropped\.txt \(13 bytes\) to .*:\/tmp\/dropped\.txt; /);
    expect((await inContainer('cat /tmp/dropped.txt')).toString()).toBe('dropped here\n');
  });

  it('a file whose name holds a control character is refused in the page; nothing reaches the container', async () => {
    const bad = await page.evaluateHandle(() => {
      const transfer = new DataTransfer();
      transfer.items.add(new File(['x'], 'bad\tname'));
      return transfer;
    });
    await page.dispatchEvent('#copy-drop', 'drop', { dataTransfer: bad });
    expect(await page.textContent('#copy-chosen')).toBe('bad\\tname (1 bytes)');
    await page.click('#copy-upload');
    expect(await settled()).toBe('a file name must not contain control characters: "bad\\tname"');
    expect((await inContainer('ls /tmp')).toString()).not.toMatch(/bad/);
  });

  it('a directory downloads as the tar docker cp gives, entry for entry; the saved file is what the page checked', async () => {
    await page.fill('#copy-path', '/srv/d');
    await page.click('#copy-download');
    const said = await settled();
    await page.waitForSelector('#copy-save:not([hidden])');
    await page.screenshot({ path: `${ARTIFACTS}/lab-copy.png`, fullPage: true });
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#copy-save')]);
    expect(download.suggestedFilename()).toBe('d.tar');
    const saved = readFileSync((await download.path())!);
    expect(said).toBe(`Downloaded ${c}:/srv/d: ${saved.byteLength} tar bytes; sha256 ${sha256(saved)} checked against the server's.`);
    expect(await page.getAttribute('#copy-progress', 'value')).toBe(String(saved.byteLength));
    const byDocker = await dockerCli(['cp', `${c}:/srv/d`, '-']);
    expect(byDocker.code).toBe(0);
    const expected = await tarEntries(byDocker.stdout);
    expect(expected.map((e) => e.path).sort()).toEqual(['d/', 'd/a.txt', 'd/empty/', 'd/link', 'd/sub/', 'd/sub/b.bin', 'd/zero']);
    expect(await tarEntries(saved)).toEqual(expected);
  });

  it('a regular file says its size from stat beside the tar bytes; its saved name is NAME.tar', async () => {
    await page.fill('#copy-path', '/srv/d/sub/b.bin');
    await page.click('#copy-download');
    expect(await settled()).toMatch(/^Downloaded .*:\/srv\/d\/sub\/b\.bin: \d+ tar bytes \(a file of 200000 bytes\); sha256 [0-9a-f]{64} checked/);
    // Done, the bar is full.
    expect(await page.getAttribute('#copy-progress', 'value')).toBe(await page.getAttribute('#copy-progress', 'max'));
    expect(await page.textContent('#copy-save')).toBe('Save b.bin.tar');
  });

  it('a missing path shows PATH_NOT_FOUND and offers nothing to save', async () => {
    await page.fill('#copy-path', '/srv/no-such');
    await page.click('#copy-download');
    expect(await settled()).toMatch(/^PATH_NOT_FOUND: .*\/srv\/no-such/);
    expect(await page.isHidden('#copy-save')).toBe(true);
    expect(problems).toEqual([]);
  });
});
