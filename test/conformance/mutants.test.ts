import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadFeatures, loadScenarios, runScenario, type ScenarioResult } from '../../src/conformance/index.js';
import { dockerOperations, probeOperations } from '../../src/operations/index.js';
import { startServer, type RunningServer } from '../../src/server/index.js';
import { DockerFixture } from '../support/docker.js';
import { bufferingHttpServer, mutatingProxy, pulledEagerly, withInput, type Listening } from './mutants.js';

/**
 * Each scenario below claims a statement; each broken server breaks exactly that
 * statement (a mutation that once passed every test, issue 21), and the scenario
 * must fail on it, saying why. The same scenarios pass against the real server
 * (conformance.test.ts).
 */

const features = { ...loadFeatures(), auth: false };
const KEEPALIVE_MS = features.limits.keepaliveMs;

function run(id: string, url: string): Promise<ScenarioResult> {
  const found = loadScenarios().find((s) => s.scenario.id === id);
  if (!found) throw new Error(`no scenario ${id}`);
  return runScenario(found.area, found.scenario, { url, codec: 'msgpack', features });
}

describe('scenarios that must fail on a broken server (no Docker)', () => {
  let server: RunningServer;
  const proxies: Listening[] = [];
  const behind = async (make: (upstream: string) => Promise<Listening>): Promise<string> => {
    const proxy = await make(server.wsUrl);
    proxies.push(proxy);
    return proxy.url;
  };
  beforeAll(async () => {
    server = await startServer({ port: 0, webTransportPort: false, docker: false, operations: probeOperations(), keepaliveMs: KEEPALIVE_MS });
  });
  afterAll(async () => {
    await Promise.all(proxies.map((p) => p.close()));
    await server.close();
  });

  const firstFrameGetsCredit = (type: string) => (upstream: string) => {
    const answered = new Set<string>();
    return mutatingProxy(upstream, {
      toCaller: (frame, seen) => {
        const id = frame.id ?? '';
        const first = !answered.has(id);
        answered.add(id);
        const asked = seen.get(id)?.payload?.['credit'] !== undefined;
        return first && asked && frame.type === type ? [{ type: 'call.credit', id, payload: { bytes: 0 } }, frame] : [frame];
      },
    });
  };

  it('credit-002 (CR-6) fails on a server that applies output credit to a unary call', async () => {
    const result = await run('credit-002', await behind(firstFrameGetsCredit('call.responded')));
    expect(result.status).toBe('fail');
    expect(result.message).toMatch(/"type":"call\.credit".*expected "call\.responded"/);
  });

  it('credit-002 (CR-6) fails on a server that sends call.credit before an INVALID_INPUT refusal', async () => {
    const result = await run('credit-002', await behind(firstFrameGetsCredit('call.error')));
    expect(result.status).toBe('fail');
    expect(result.message).toMatch(/"type":"call\.credit".*expected "call\.error"/);
  });

  it('input-005 (CR-3) fails on a server that grants input credit as frames arrive', async () => {
    const url = await behind((upstream) =>
      mutatingProxy(upstream, { onCaller: (frame, size) => (frame.type === 'call.input' && frame.id !== undefined ? [{ type: 'call.credit', id: frame.id, payload: { bytes: size } }] : []) }),
    );
    const result = await run('input-005', url);
    expect(result.status).toBe('fail');
    expect(result.message).toMatch(/^expected nothing more for input-005-idle-.*"type":"call\.credit"/);
  });

  it('websocket-020 (KA-1) fails on a server that drops a silent peer two intervals late', async () => {
    const result = await run('websocket-020', await behind((upstream) => mutatingProxy(upstream, { closeLaterMs: 2 * KEEPALIVE_MS })));
    expect(result.status).toBe('fail');
    expect(result.message).toMatch(/expected the connection \(or stream\) to close within \d+ ms/);
  }, 30_000);

  it('http-003 (HTTP-2) fails on a server that sends a stream\'s lines only once the stream has ended', async () => {
    const buffering = await bufferingHttpServer();
    proxies.push(buffering);
    const result = await run('http-003', buffering.url);
    expect(result.status).toBe('fail');
    expect(result.message).toMatch(/^no complete HTTP answer within 5000 ms/);
  }, 30_000);
});

describe('scenarios that must fail on a server without its bounds (no Docker)', () => {
  const started: RunningServer[] = [];
  afterAll(() => Promise.all(started.map((s) => s.close())));

  it('backpressure-001 (BP-1) fails on a server that pulls a stream past the call\'s buffer', async () => {
    const operations = probeOperations().map((op) => (op.name === 'conformance/flood' ? pulledEagerly(op) : op));
    const server = await startServer({ port: 0, webTransportPort: false, docker: false, operations });
    started.push(server);
    const result = await run('backpressure-001', server.wsUrl);
    expect(result.status).toBe('fail');
    expect(result.message).toMatch(/^conformance\/flood-progress: \$\.produced: expected < 200/);
  }, 60_000);

  it('limits-011 (BP-3) fails on a server that keeps reading a peer whatever waits for it', async () => {
    const server = await startServer({ port: 0, webTransportPort: false, docker: false, operations: probeOperations(), limits: { maxOutboundBytesPerConnection: 2 ** 40 } });
    started.push(server);
    const result = await run('limits-011', server.wsUrl);
    expect(result.status).toBe('fail');
    expect(result.message).toMatch(/^services\/stats: \$\.liveCalls: expected < 4/);
  }, 60_000);
});

describe('exec-013 must fail on an exec that holds a signal behind stdin (EXEC-8)', () => {
  const docker = new DockerFixture();
  const started: RunningServer[] = [];
  afterAll(async () => {
    await Promise.all(started.map((s) => s.close()));
    await docker.cleanup();
  });
  const serve = async (reorder: (items: AsyncIterable<unknown>) => AsyncIterable<unknown>): Promise<string> => {
    const operations = dockerOperations(docker.engine).map((op) => (op.name === 'docker/container/exec' ? withInput(op, reorder) : op));
    const server = await startServer({ port: 0, webTransportPort: false, docker: false, operations });
    started.push(server);
    return server.wsUrl;
  };

  it('exec-012 fails when stdin overtakes the resizes sent before it', async () => {
    const url = await serve(async function* (items) {
      const held: unknown[] = [];
      for await (const item of items) {
        if (typeof item === 'object' && item !== null && 'resize' in item) held.push(item);
        else yield* [item, ...held.splice(0)];
      }
    });
    const result = await run('exec-012', url);
    expect(result.status).toBe('fail');
    expect(result.message).toMatch(/^collect exec-012-a-.*joined text .* expected "\\r\\n40 120\\r\\n"/);
  }, 60_000);

  it('exec-013 fails when a signal waits for the end of stdin the command never reads', async () => {
    const url = await serve(async function* (items) {
      const held: unknown[] = [];
      for await (const item of items) {
        if (typeof item === 'object' && item !== null && 'signal' in item) held.push(item);
        else yield item;
      }
      yield* held;
    });
    const result = await run('exec-013', url);
    expect(result.status).toBe('fail');
    expect(result.message).toMatch(/"text":"got TERM\\n".*nothing came/);
  }, 60_000);
});
