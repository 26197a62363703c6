import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createDispatcher, defineOperation, Registry, type Dispatcher } from '../../src/dispatcher/index.js';
import { createHttpCalls } from '../../src/transports/index.js';

/**
 * Plain HTTP runs calls on the engine and knows no operation by name: any operation
 * whose contract reads a command's end from its terminal item (`commandEnd`) gets an
 * exec's envelope and exit code, and every other stream a call's.
 */
const runItem = z.union([z.object({ line: z.string() }), z.object({ code: z.number().int(), done: z.literal(true) })]);
const jobs = new Registry().register(
  defineOperation({
    name: 'jobs/run',
    kind: 'subscription',
    input: z.object({ code: z.number().int() }),
    output: runItem,
    commandEnd: (item) => {
      const end = item as { code?: number; done?: boolean };
      return end.done === true ? { exitCode: end.code!, stdoutBytes: 6, stderrBytes: 0 } : undefined;
    },
    handler: async function* ({ code }) {
      yield { line: 'built' };
      yield { code, done: true as const };
    },
  }),
  defineOperation({
    name: 'jobs/lines',
    kind: 'subscription',
    input: z.object({ code: z.number().int() }),
    output: runItem,
    handler: async function* ({ code }) {
      yield { line: 'built' };
      yield { code, done: true as const };
    },
  }),
);

async function post(port: number, op: string, input: unknown): Promise<{ lines: Record<string, unknown>[]; trailer: string | undefined }> {
  const res = await fetch(`http://127.0.0.1:${port}/call/${op}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(input) });
  const text = await res.text();
  return { lines: text.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>), trailer: res.headers.get('x-callwire-exit-code') ?? undefined };
}

describe('plain HTTP reports a command end from the contract, not from an operation name', () => {
  let server: Server;
  let dispatcher: Dispatcher;
  let port = 0;
  beforeAll(async () => {
    dispatcher = createDispatcher({ registry: jobs, anonymousIdentity: { subject: 'local', scopes: ['*'] } });
    const calls = createHttpCalls({ dispatcher });
    server = createServer((req, res) => void (calls(req, res) || res.writeHead(404).end()));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('an operation with commandEnd: its exit code is the envelope\'s, masked as a process status', async () => {
    const { lines } = await post(port, 'jobs/run', { code: 300 });
    expect(lines.slice(0, 2)).toEqual([{ line: 'built' }, { code: 300, done: true }]);
    expect(lines[2]).toMatchObject({ kind: 'callwire.terminal', command: 'exec', outcome: 'operation_failure', exit_code: 44, exec: { exit_code: 300, stdout_bytes: 6 } });
    const ok = await post(port, 'jobs/run', { code: 0 });
    expect(ok.lines[2]).toMatchObject({ command: 'exec', outcome: 'success', exit_code: 0 });
  });

  it('the same items from an operation without it: a call that succeeded, whatever its items say', async () => {
    const { lines } = await post(port, 'jobs/lines', { code: 300 });
    expect(lines[2]).toMatchObject({ kind: 'callwire.terminal', command: 'call', outcome: 'success', exit_code: 0 });
    expect(lines[2]).not.toHaveProperty('exec');
  });

  it('the calls of a keep-alive connection share one table of its calls, which its close empties', async () => {
    await post(port, 'jobs/run', { code: 0 });
    await post(port, 'jobs/run', { code: 0 });
    const live = [...dispatcher.connections];
    expect(live.reduce((n, t) => n + t.stats.liveCalls, 0)).toBe(0);
    // fetch keeps its connection: the calls above went on one or two connections, not one table per request.
    expect(live.length).toBeLessThanOrEqual(2);
    expect(live.reduce((n, t) => n + t.stats.callsStarted, 0)).toBeGreaterThanOrEqual(2);
  });
});
