/**
 * Plain HTTP (spec §5.6): one POST per call over keep-alive connections, through
 * node:http's agent or through fetch. fetch (undici) costs the client several times
 * what node:http does for a small call (bench/PROFILE.md, "HTTP clients"), so the
 * server is measured with node:http and fetch has a row of its own.
 */
import { Agent, request } from 'node:http';
import type { Subject } from '../subject.js';

type Post = (url: string, body: string) => Promise<unknown>;

/**
 * node:http with a keep-alive agent: one socket per call in flight, reused. A socket the
 * server closed as idle (its keep-alive timeout, while other subjects ran) can be handed
 * out just as it closes: such a call is sent again once, as Node's documentation advises
 * (`request.reusedSocket`).
 */
function nodeHttpPost(): { post: Post; close: () => void } {
  const agent = new Agent({ keepAlive: true, maxSockets: 1024 });
  const once = (url: string, body: string, retry: boolean): Promise<unknown> =>
    new Promise((resolve, reject) => {
      const req = request(url, { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          if (res.statusCode !== 200) return reject(new Error(`HTTP ${res.statusCode}`));
          resolve(JSON.parse(Buffer.concat(chunks).toString()));
        });
        res.on('error', reject);
      });
      req.on('error', (error: NodeJS.ErrnoException) => {
        if (retry && req.reusedSocket && error.code === 'ECONNRESET') resolve(once(url, body, false));
        else reject(error);
      });
      req.end(body);
    });
  return { post: (url, body) => once(url, body, true), close: () => agent.destroy() };
}

const fetchPost: Post = async (url, body) => {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  if (res.status !== 200) throw new Error(`HTTP ${res.status}`);
  return res.json();
};

function subject(name: string, url: string, peers: readonly string[], client: 'node:http' | 'fetch'): Subject {
  const body = JSON.stringify({ text: 'hello bench' });
  const { post, close } = client === 'fetch' ? { post: fetchPost, close: () => undefined } : nodeHttpPost();
  return { name, peers, echo: () => post(url, body), close: async () => close() };
}

/** callwire's `POST /call/bench/echo`. */
export function httpSubject(name: string, wsUrl: string, peers: readonly string[], client: 'node:http' | 'fetch' = 'node:http'): Subject {
  return subject(name, `${wsUrl.replace(/^ws/, 'http').replace(/\/callwire$/, '')}/call/bench/echo`, peers, client);
}

/** The bare node:http echo (bench/peers.ts `startRawHttp`): the HTTP ceiling. */
export function httpCeilingSubject(name: string, port: number, peers: readonly string[]): Subject {
  return subject(name, `http://127.0.0.1:${port}/`, peers, 'node:http');
}
