import { existsSync, readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { checkBrowserRequest, requestPath, type OriginPolicy } from '../transports/index.js';

/** The Lab's built files (scripts/build-lab.mjs), beside the compiled server, from src/ and dist/ alike. */
const LAB_DIR = new URL('../../dist/lab/', import.meta.url);
const FILES: Readonly<Record<string, { file: string; type: string }>> = {
  '/': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/lab/bundle.js': { file: 'bundle.js', type: 'text/javascript; charset=utf-8' },
  '/lab/lab.css': { file: 'lab.css', type: 'text/css; charset=utf-8' },
  '/lab/xterm.css': { file: 'xterm.css', type: 'text/css; charset=utf-8' },
};

/**
 * Serves the Lab (docs/lab.md "The Lab") at `/`: a page that can run commands, so it is
 * framed by nobody, loads nothing from elsewhere, and is refused under a Host that
 * is not ours (DNS rebinding, spec §10.1), as the WebSocket is. Returns false for
 * paths that are not the Lab's.
 */
export function createLab(policy: OriginPolicy): (req: IncomingMessage, res: ServerResponse) => boolean {
  const cache = new Map<string, Buffer>();
  return (req, res) => {
    const path = requestPath(req.url);
    if (path === undefined) return false;
    if (path === '/favicon.ico') {
      res.writeHead(204).end();
      return true;
    }
    const entry = FILES[path];
    if (!entry || (req.method !== 'GET' && req.method !== 'HEAD')) return false;
    const verdict = checkBrowserRequest(policy, undefined, req.headers.host);
    if (!verdict.ok) {
      res.writeHead(403, { 'content-type': 'text/plain; charset=utf-8' }).end(`${verdict.reason}\n`);
      return true;
    }
    const url = new URL(entry.file, LAB_DIR);
    if (!cache.has(entry.file)) {
      if (!existsSync(url)) {
        res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('the Lab is not built: run npm run build\n');
        return true;
      }
      cache.set(entry.file, readFileSync(url));
    }
    const body = cache.get(entry.file)!;
    res.writeHead(200, {
      'content-type': entry.type,
      'content-length': String(body.byteLength),
      'cache-control': 'no-cache',
      'x-content-type-options': 'nosniff',
      'x-frame-options': 'DENY',
      'referrer-policy': 'no-referrer',
      'content-security-policy': "default-src 'self'; connect-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
    });
    res.end(req.method === 'HEAD' ? undefined : body);
    return true;
  };
}
