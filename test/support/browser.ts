import { existsSync } from 'node:fs';
import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { build, type Plugin } from 'esbuild';
import { chromium, type Browser } from 'playwright-core';

/** Debian's Chromium, which .ci/run installs. */
export const CHROMIUM = '/usr/bin/chromium';
export const hasChromium = existsSync(CHROMIUM);
/** Why the browser tests are skipped here, for their titles (`skipTitle`); undefined where Chromium is installed. */
export const chromiumMissing: string | undefined = hasChromium ? undefined : `no ${CHROMIUM}; .ci/run installs it`;

/** `extraArgs`: more Chromium switches, e.g. `--host-resolver-rules` to play a rebinding DNS. */
export function launchChromium(extraArgs: readonly string[] = []): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', ...extraArgs],
  });
}

/**
 * The client SDK bundled for the browser platform, as a page would load it
 * (callwire/client/browser): nothing is external, so a Node module reaching it fails the bundle.
 */
export async function bundleClient(): Promise<string> {
  const bundle = await build({ entryPoints: ['src/client/index.ts'], bundle: true, format: 'esm', platform: 'browser', write: false });
  return bundle.outputFiles[0]!.text;
}

/**
 * A page on http://127.0.0.1 (a secure context; about:blank is not one in headless
 * Chromium) that runs `pageScript` as a module, with the SDK at /client.js.
 */
export async function servePage(pageScript: string, clientScript: string): Promise<{ server: Server; url: string; handler: RequestListener }> {
  const handler: RequestListener = (req, res) => {
    if (req.url === '/client.js') return void res.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8' }).end(clientScript);
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(`<!doctype html><meta charset="utf-8"><title>callwire</title><script type="module">${pageScript}</script>`);
  };
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, handler };
}

// What the conformance runner takes from Node, as a page has it: the paths a WebTransport
// run over the browser's own WebTransport never takes (plain HTTP, WebSocket, files) throw.
const PAGE_STUBS: Record<string, string> = {
  'node:crypto': 'export const randomUUID = () => crypto.randomUUID();',
  'node:http': 'export const request = () => { throw new Error("no plain HTTP in a page"); };',
  'node:https': 'export const request = () => { throw new Error("no plain HTTP in a page"); };',
  'node:fs': 'export const readFileSync = () => { throw new Error("no files in a page"); }; export const readdirSync = readFileSync;',
  'node:path': 'export const join = (...parts) => parts.join("/");',
  'node:net': 'export const connect = () => { throw new Error("no raw TCP in a page"); };',
  ws: 'export default class { constructor() { throw new Error("no ws package in a page: the page has its own WebSocket"); } }',
};
const pageStubs: Plugin = {
  name: 'page-stubs',
  setup(b) {
    b.onResolve({ filter: /^(node:(crypto|https?|fs|path|net)|ws)$/ }, (args) => ({ path: args.path, namespace: 'page-stub' }));
    b.onLoad({ filter: /.*/, namespace: 'page-stub' }, (args) => ({ contents: PAGE_STUBS[args.path]!, loader: 'js' }));
  },
};

/**
 * The conformance runner (`runScenario`) bundled for a page: there its WebTransport
 * connections are the browser's own, over HTTP/3. Scenarios that write bytes in hex
 * need Node's Buffer, which a page lacks (and must not fake: msgpackr would take it for Node's).
 */
export async function bundleConformanceRunner(): Promise<string> {
  const bundle = await build({
    entryPoints: ['src/conformance/runner.ts'],
    bundle: true,
    format: 'esm',
    platform: 'browser',
    write: false,
    external: ['@fails-components/webtransport', 'node:*'],
    plugins: [pageStubs],
  });
  return bundle.outputFiles[0]!.text;
}
