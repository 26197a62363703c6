import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { inspect } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { engineAgent } from '../../src/operations/docker/engine-agent.js';

/**
 * docker-modem formats the options of every engine request, the connection pool among
 * them, with `util.inspect(options, { showHidden: true, depth: 4 })`, its debug log on or
 * off. The pool's text must not grow with the engine streams it holds open: with every
 * live socket in it, a thousand followed logs stalled the process that served them (the
 * fleet's agent missed its heartbeats and its host went down).
 */
describe('the connection pool to the engine, as docker-modem formats each request', () => {
  const held: http.ServerResponse[] = [];
  const engine = http.createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'application/json' });
    response.write('{}\n');
    held.push(response);
  });
  let port = 0;
  beforeAll(async () => {
    await new Promise<void>((resolve) => engine.listen(0, '127.0.0.1', resolve));
    port = (engine.address() as AddressInfo).port;
  });
  afterAll(async () => {
    for (const response of held) response.end();
    engine.closeAllConnections();
    await new Promise((resolve) => engine.close(resolve));
  });

  it('prints the same short text with 50 streams open as with none', async () => {
    const agent = engineAgent('http');
    const asDockerModem = (): string => inspect({ agent, path: '/containers/x/logs?follow=1' }, { showHidden: true, depth: 4 });
    const idle = asDockerModem();
    const requests = await Promise.all(
      Array.from(
        { length: 50 },
        () =>
          new Promise<http.ClientRequest>((resolve, reject) => {
            const request = http.get({ host: '127.0.0.1', port, path: '/containers/x/logs?follow=1', agent }, () => resolve(request));
            request.once('error', reject);
          }),
      ),
    );
    expect(Object.values(agent.sockets).flat()).toHaveLength(50);
    expect(asDockerModem()).toBe(idle);
    expect(idle.length).toBeLessThan(200);
    for (const request of requests) request.destroy();
    agent.destroy();
  });
});
