import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import { loadFeatures, loadScenarios, runScenario } from '../../src/conformance/index.js';
import { defineOperation } from '../../src/dispatcher/index.js';
import { dockerOperations } from '../../src/operations/index.js';
import { codecs, subprotocols } from '../../src/protocol/index.js';
import { startServer, type RunningServer } from '../../src/server/index.js';
import { DockerFixture } from '../support/docker.js';

/**
 * A deliberately broken server: it answers every call.requested with the input
 * and then, wrongly, a call.completed (a unary call must end with its answer).
 */
function brokenServer(): Promise<{ url: string; close: () => Promise<void> }> {
  const wss = new WebSocketServer({ port: 0, host: '127.0.0.1', handleProtocols: () => subprotocols.msgpack });
  wss.on('connection', (ws) => {
    ws.on('message', (data: Buffer) => {
      const frame = codecs.msgpack.decode(new Uint8Array(data)) as { type: string; id: string; payload: { input?: unknown } };
      if (frame.type !== 'call.requested') return;
      ws.send(codecs.msgpack.encode({ type: 'call.responded', id: frame.id, payload: { output: frame.payload.input ?? null } }));
      ws.send(codecs.msgpack.encode({ type: 'call.completed', id: frame.id, payload: {} }));
    });
  });
  return new Promise((resolve) =>
    wss.on('listening', () =>
      resolve({ url: `ws://127.0.0.1:${(wss.address() as AddressInfo).port}/callwire`, close: () => new Promise((r) => wss.close(() => r())) }),
    ),
  );
}

describe('the conformance runner catches a broken server', () => {
  let server: { url: string; close: () => Promise<void> };
  beforeAll(async () => {
    server = await brokenServer();
  });
  afterAll(() => server.close());

  it('fails unary-001 (RES-2: nothing after a unary answer) and names the stray call.completed', async () => {
    const unary = loadScenarios().find((s) => s.scenario.id === 'unary-001')!;
    const result = await runScenario(unary.area, unary.scenario, { url: server.url, codec: 'msgpack', features: loadFeatures() });
    expect(result.status).toBe('fail');
    expect(result.covers).toContain('RES-2');
    expect(result.message).toMatch(/expected nothing more for .* got .*"type":"call\.completed"/);
  });
});

/**
 * exec-001 over a server whose exec sends its terminal frame before the output
 * (EXEC-1 broken): the ordered matcher must see it. A matcher that takes frames
 * from anywhere in the queue would pass this server.
 */
describe('the conformance runner catches a terminal frame sent too early', () => {
  const docker = new DockerFixture();
  let server: RunningServer;
  beforeAll(async () => {
    const operations = dockerOperations(docker.engine).map((op) => {
      if (op.name !== 'docker/container/exec' || op.kind !== 'subscription') return op;
      const real = op.handler;
      return defineOperation({
        ...op,
        handler: (input, ctx) =>
          (async function* () {
            const frames: unknown[] = [];
            for await (const frame of real(input, ctx) as AsyncIterable<unknown>) frames.push(frame);
            const terminal = frames.findIndex((f) => (f as { terminal?: boolean }).terminal === true);
            yield frames[terminal];
            yield* frames.filter((_f, i) => i !== terminal);
          })(),
      });
    });
    server = await startServer({ port: 0, webTransportPort: false, docker: false, operations });
  });
  afterAll(async () => {
    await server.close();
    await docker.cleanup();
  });

  it('fails exec-001, naming the early terminal frame', async () => {
    const exec = loadScenarios().find((s) => s.scenario.id === 'exec-001')!;
    const features = { ...loadFeatures(), auth: false };
    const result = await runScenario(exec.area, exec.scenario, { url: server.wsUrl, codec: 'msgpack', features });
    expect(result.status).toBe('fail');
    expect(result.covers).toContain('EXEC-1');
    expect(result.message).toMatch(/^the next 2 frames \{[^|]*"terminal":true.*are not, in any order/);
  });
});

