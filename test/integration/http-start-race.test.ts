import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDispatcher, type Dispatcher } from '../../src/dispatcher/index.js';
import { createHttpCalls } from '../../src/transports/index.js';
import { sampleRegistry } from '../support/sample-ops.js';

/** Sends the headers and half the body; `rest()` sends the other half and resolves with the answer. */
function halfSent(port: number, body: string): { rest: () => Promise<{ status: number; text: string }> } {
  const req = request({ port, method: 'POST', path: '/call/test/echo', headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) } });
  const answer = new Promise<{ status: number; text: string }>((resolve, reject) => {
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (d: string) => (text += d)).on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on('error', reject);
  });
  req.write(body.slice(0, 5));
  return { rest: () => (req.end(body.slice(5)), answer) };
}

describe('plain HTTP: a call whose start fails ends its request, never the server (spec §5.6)', () => {
  let server: Server;
  let dispatcher: Dispatcher;
  let port = 0;
  beforeAll(async () => {
    dispatcher = createDispatcher({ registry: sampleRegistry().registry, anonymousIdentity: { subject: 'local', scopes: ['*'] } });
    const calls = createHttpCalls({ dispatcher });
    server = createServer((req, res) => void (calls(req, res) || res.writeHead(404).end()));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('shutdown begins while a body is on its way: the call is answered 503 UNAVAILABLE once the body is in', async () => {
    // The request is in the server's hands, past its checks and reading its body, when shutdown begins.
    const taken = new Promise((resolve) => server.once('request', resolve));
    const call = halfSent(port, JSON.stringify({ text: 'late' }));
    await taken;
    await dispatcher.shutdown();
    const answer = await call.rest();
    expect(answer.status).toBe(503);
    expect(JSON.parse(answer.text)).toMatchObject({ outcome: 'infrastructure_failure', diagnostics: [{ code: 'UNAVAILABLE' }] });
  });
});
