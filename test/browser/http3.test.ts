import { execFileSync } from 'node:child_process';
import type { Server } from 'node:http';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundleClient, chromiumMissing, launchChromium, servePage } from '../support/browser.js';
import { DockerFixture } from '../support/docker.js';
import { http3Missing, ServerFixture, transportCases } from '../support/server-fixture.js';
import { skipTitle } from '../support/skip.js';

const missing = chromiumMissing ?? http3Missing;

// In the page: the SDK over the browser's own WebTransport (HTTP/3, QUIC), no polyfill.
const PAGE_SCRIPT = `
import { connect, exec } from '/client.js';
const { url, certHash, container, quick, many, raw } = JSON.parse(decodeURIComponent(location.hash.slice(1)));
// Raw streams of the browser's WebTransport, with JSON frames (§5.1): a FIN and a reset of its own.
async function rawStreams() {
  const hash = new Uint8Array(certHash.match(/../g).map((h) => parseInt(h, 16)));
  const wt = new WebTransport(url + '/json', { serverCertificateHashes: [{ algorithm: 'sha-256', value: hash }] });
  await wt.ready;
  const frame = (value) => {
    const body = new TextEncoder().encode(JSON.stringify(value));
    const out = new Uint8Array(4 + body.byteLength);
    new DataView(out.buffer).setUint32(0, body.byteLength);
    out.set(body, 4);
    return out;
  };
  const frames = async function* (readable) {
    const reader = readable.getReader();
    let held = new Uint8Array(0);
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      const joined = new Uint8Array(held.byteLength + value.byteLength);
      joined.set(held); joined.set(value, held.byteLength); held = joined;
      while (held.byteLength >= 4) {
        const length = new DataView(held.buffer, held.byteOffset).getUint32(0);
        if (held.byteLength < 4 + length) break;
        yield JSON.parse(new TextDecoder().decode(held.subarray(4, 4 + length)));
        held = held.subarray(4 + length);
      }
    }
  };
  // FIN after the input: wc's stdin ends (WT-2), and the answer arrives in full, then the stream's end.
  const fin = await wt.createBidirectionalStream();
  const finWriter = fin.writable.getWriter();
  await finWriter.write(frame({ type: 'call.requested', id: 'fin', payload: { operationId: 'docker/container/exec', input: { containerId: container, cmd: ['wc', '-c'], stdin: 'stream' } } }));
  const seen = [];
  for await (const f of frames(fin.readable)) {
    seen.push(f.type === 'call.responded' ? f.payload.output : f.type);
    if (f.type === 'call.credit' && seen.length === 1) {
      await finWriter.write(frame({ type: 'call.input', id: 'fin', payload: { item: { data: { $base64: btoa('hello\\n') } } } }));
      await finWriter.close();
    }
  }
  // A reset before the end aborts the call (WT-2).
  const held = await wt.createBidirectionalStream();
  const heldWriter = held.writable.getWriter();
  await heldWriter.write(frame({ type: 'call.requested', id: 'held', payload: { operationId: 'test/forever', input: null } }));
  await frames(held.readable).next();
  window.holding = true;
  await new Promise((resolve) => (window.resetNow = resolve));
  await heldWriter.abort(new Error('reset by the page'));
  return { seen };
}
try {
  if (raw) throw { quick: await rawStreams() };
  const client = await connect(url, { certHash });
  if (many) {
    let done = 0;
    for (; done < many; done++) await client.call('test/echo', { text: String(done) });
    throw { quick: { done } };
  }
  const echo = await client.call('test/echo', { text: 'over QUIC' });
  if (quick) throw { quick: echo };
  const ticks = [];
  for await (const t of client.iterate('test/ticker', { count: 3, intervalMs: 1 })) ticks.push(t.n);
  const run = exec(client, container, ['sh', '-c', 'echo out; echo err >&2; exit 4']);
  const frames = [];
  run.output.subscribe((f) => frames.push(f.stream + ':' + f.text));
  const result = await run.result;
  const aborter = new AbortController();
  const long = exec(client, container, ['sh', '-c', 'echo started; exec sleep 1005'], { signal: aborter.signal });
  await new Promise((resolve) => long.output.subscribe({ next: resolve, error: resolve }));
  window.started = true;
  await new Promise((resolve) => (window.abortNow = resolve));
  aborter.abort();
  const aborted = await long.result.then(() => 'resolved', (e) => e.code);
  window.result = { echo, ticks, frames, result, aborted, native: typeof WebTransport === 'function' };
} catch (error) {
  window.result = error && error.quick ? { echo: error.quick } : { error: String(error && error.stack || error) };
}
`;

/**
 * The test of record that callwire speaks QUIC to a client nobody here wrote:
 * Chromium's native WebTransport, over HTTP/3, through the Deno edge, to a real
 * server and a real Docker engine. The page is served from http://127.0.0.1 (a
 * secure context; about:blank is not one in headless Chromium).
 */
describe.skipIf(missing !== undefined)(skipTitle('HTTP/3 from Chromium through the Deno edge', missing), () => {
  const docker = new DockerFixture();
  const fx = new ServerFixture();
  let page: Server;
  let browser: Browser;
  let pageUrl = '';
  let c = '';

  beforeAll(async () => {
    ({ server: page, url: pageUrl } = await servePage(PAGE_SCRIPT, await bundleClient()));
    await fx.start({ http3: true, docker: docker.engine, allowOrigins: [new URL(pageUrl).origin] });
    c = await docker.container();
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => page?.close(resolve));
    await fx.stop();
    await docker.cleanup();
  });

  it('the banner says HTTP/3 is on through the Deno edge', () => {
    expect(fx.server.http3).toBe(true);
    expect(fx.server.http3Reason).toMatch(/Deno edge/);
  });

  it('a unary call, a subscription, an exec with its output and exit code, and an abort that kills the process', async () => {
    const tab = await browser.newPage();
    await tab.goto(`${pageUrl}#${encodeURIComponent(JSON.stringify({ url: fx.server.wtUrl, certHash: fx.server.certHash, container: c }))}`);
    await tab.waitForFunction(() => (window as unknown as { started?: boolean; result?: unknown }).started || (window as unknown as { result?: unknown }).result, undefined, { timeout: 30_000 });
    // `started` arrives before the shell has exec'd its sleep: the process list catches up.
    await expect.poll(() => docker.processes(c), { timeout: 5000 }).toContain('sleep 1005');
    await tab.evaluate(() => (window as unknown as { abortNow: () => void }).abortNow());
    await tab.waitForFunction(() => (window as unknown as { result?: unknown }).result !== undefined, undefined, { timeout: 20_000 });
    const result = (await tab.evaluate(() => (window as unknown as { result: unknown }).result)) as Record<string, unknown>;
    expect(result['error']).toBeUndefined();
    expect(result['native']).toBe(true);
    expect(result['echo']).toEqual({ text: 'over QUIC' });
    expect(result['ticks']).toEqual([0, 1, 2]);
    // Order is kept within each stream (EXEC-3), not across stdout and stderr.
    expect([...(result['frames'] as string[])].sort()).toEqual(['stderr:err\n', 'stdout:out\n']);
    expect(result['result']).toEqual({ exitCode: 4, stdoutBytes: 4, stderrBytes: 4 });
    expect(result['aborted']).toBe('CANCELLED');
    await expect.poll(() => docker.processes(c), { timeout: 5000 }).toEqual(['sleep 1000000']);
    await tab.close();
  }, 60_000);

  it('250 calls one after another on one session: each stream ends, so its slot comes back (Deno\'s WebTransport wrapper sent no FIN, and the 100th call failed)', async () => {
    const tab = await browser.newPage();
    await tab.goto(`${pageUrl}#${encodeURIComponent(JSON.stringify({ url: fx.server.wtUrl, certHash: fx.server.certHash, many: 250 }))}`);
    await tab.waitForFunction(() => (window as unknown as { result?: unknown }).result !== undefined, undefined, { timeout: 30_000 });
    expect(await tab.evaluate(() => (window as unknown as { result: unknown }).result)).toEqual({ echo: { done: 250 } });
    await tab.close();
  }, 60_000);

  it('the browser\'s own FIN ends an exec\'s stdin and the whole answer follows; its reset aborts a call on the server (WT-2 across the edge)', async () => {
    const tab = await browser.newPage();
    await tab.goto(`${pageUrl}#${encodeURIComponent(JSON.stringify({ url: fx.server.wtUrl, certHash: fx.server.certHash, container: c, raw: true }))}`);
    await tab.waitForFunction(() => (window as unknown as { holding?: boolean; result?: unknown }).holding || (window as unknown as { result?: unknown }).result, undefined, { timeout: 30_000 });
    expect(await tab.evaluate(() => (window as unknown as { result?: unknown }).result)).toBeUndefined();
    expect(fx.liveCalls()).toBe(1);
    const held = fx.probe.signals.at(-1)!;
    expect(held.aborted).toBe(false);
    await tab.evaluate(() => (window as unknown as { resetNow: () => void }).resetNow());
    await expect.poll(() => fx.liveCalls(), { timeout: 5000 }).toBe(0);
    expect(held.aborted).toBe(true);
    await tab.waitForFunction(() => (window as unknown as { result?: unknown }).result !== undefined, undefined, { timeout: 10_000 });
    const { echo } = (await tab.evaluate(() => (window as unknown as { result: unknown }).result)) as { echo: { seen: unknown[] } };
    expect(echo.seen).toEqual(['call.credit', { stream: 'stdout', text: '6\n' }, { exitCode: 0, terminal: true, stdoutBytes: 2, stderrBytes: 0 }, 'call.completed']);
    await tab.close();
  }, 60_000);

  it('a crashed edge is restarted, and QUIC calls work again; the WebSocket listener never noticed', async () => {
    const edges = (): number[] =>
      // Ours only (children of this process): other test files' servers run edges too.
      execFileSync('pgrep', ['-P', String(process.pid), '-f', 'edge/h3-server-edge.ts'], { encoding: 'utf8' }).split('\n').filter(Boolean).map(Number);
    const before = edges();
    expect(before.length).toBeGreaterThan(0);
    const ws = await fx.client(transportCases[0]!);
    for (const pid of before) process.kill(pid, 'SIGKILL');
    expect(await ws.call('test/echo', { text: 'still here' })).toEqual({ text: 'still here' });
    await expect.poll(() => edges().filter((pid) => !before.includes(pid)).length, { timeout: 10_000 }).toBeGreaterThan(0);
    const tab = await browser.newPage();
    await tab.goto(`${pageUrl}#${encodeURIComponent(JSON.stringify({ url: fx.server.wtUrl, certHash: fx.server.certHash, container: c, quick: true }))}`);
    await tab.waitForFunction(() => (window as unknown as { result?: unknown }).result !== undefined, undefined, { timeout: 20_000 });
    expect(await tab.evaluate(() => (window as unknown as { result: unknown }).result)).toEqual({ echo: { text: 'over QUIC' } });
    await tab.close();
  }, 60_000);
});
