import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import { loadFeatures, loadScenarios, runScenario } from '../../src/conformance/index.js';
import { codecs, subprotocols } from '../../src/protocol/index.js';

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
