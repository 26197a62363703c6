import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineOperation, Registry, type Identity } from '../../src/dispatcher/index.js';
import { closeCodes, codecs, type Envelope } from '../../src/protocol/index.js';
import { MemoryConnection } from '../../src/testing/index.js';
import { nested } from '../support/nesting.js';
import { recordingLogger } from '../support/recording-logger.js';
import { sampleRegistry } from '../support/sample-ops.js';
import { sleep, until } from '../support/wait.js';

const tokens: Record<string, Identity> = {
  'tok-full': { subject: 'full', scopes: ['secret:read', 'secret:write', 'b'] },
  'tok-read': { subject: 'reader', scopes: ['secret:read'] },
};

function setup(identity: Identity | null = null) {
  const { registry, probe } = sampleRegistry();
  const conn = new MemoryConnection({ registry, identity, authenticate: (t) => tokens[t] });
  return { conn, client: conn.client, probe };
}

const errorOf = (e: Envelope) => (e.type === 'call.error' ? e.payload : undefined);

describe('order of checks (spec §4.1)', () => {
  it('unknown and internal operations are NOT_FOUND, and the internal handler never runs', async () => {
    const { client, probe } = setup({ subject: 'root', scopes: [] });
    client.request('n1', 'test/nope', null);
    client.request('n2', 'test/internal', null);
    expect(errorOf(await client.nextFor('n1'))).toMatchObject({ code: 'NOT_FOUND', message: 'unknown operation: test/nope' });
    expect(errorOf(await client.nextFor('n2'))).toMatchObject({ code: 'NOT_FOUND', message: 'unknown operation: test/internal' });
    expect(probe.started).toBe(0);
  });

  it('an anonymous caller of a restricted operation gets FORBIDDEN "authentication required"', async () => {
    const { client, probe } = setup();
    client.request('x', 'test/secret', null);
    expect(errorOf(await client.nextFor('x'))).toMatchObject({ code: 'FORBIDDEN', message: 'authentication required', retryable: false });
    expect(probe.started).toBe(0);
  });

  it('required scopes are all-of and the message names the missing one', async () => {
    const { client, probe } = setup(tokens['tok-read']!);
    client.request('x', 'test/secret', null);
    expect(errorOf(await client.nextFor('x'))).toMatchObject({ code: 'FORBIDDEN', message: 'missing scope: secret:write' });
    expect(probe.started).toBe(0);
  });

  it('required_scopes_any is one-of', async () => {
    const { client } = setup({ subject: 's', scopes: ['b'] });
    client.request('x', 'test/any-scope', null);
    expect((await client.nextFor('x')).type).toBe('call.responded');
    const other = setup({ subject: 's', scopes: ['c'] });
    other.client.request('y', 'test/any-scope', null);
    expect(errorOf(await other.client.nextFor('y'))).toMatchObject({ code: 'FORBIDDEN', message: 'requires one of the scopes: a, b' });
  });

  it('a per-call auth_token overrides the connection identity; an unknown one is refused without echoing it', async () => {
    const { client, probe } = setup();
    client.request('ok', 'test/secret', null, { auth_token: 'tok-full' });
    expect((await client.nextFor('ok')).type).toBe('call.responded');
    client.request('bad', 'test/secret', null, { auth_token: 'canary-7f3a' });
    const bad = errorOf(await client.nextFor('bad'));
    expect(bad).toMatchObject({ code: 'FORBIDDEN', message: 'invalid token' });
    expect(JSON.stringify(bad)).not.toContain('canary-7f3a');
    expect(probe.started).toBe(1);
  });

  it('access is checked before input: a denied call with bad input is FORBIDDEN', async () => {
    const { client } = setup();
    client.request('x', 'test/secret', { not: 'null' });
    expect(errorOf(await client.nextFor('x'))?.code).toBe('FORBIDDEN');
  });

  it('INVALID_INPUT names the field path and the problem; the handler never runs', async () => {
    const { client, probe } = setup();
    client.request('v1', 'test/echo', { text: 5 });
    expect(errorOf(await client.nextFor('v1'))).toMatchObject({ code: 'INVALID_INPUT', message: expect.stringMatching(/^input\.text: .*expected string/i) });
    client.request('v2', 'test/echo', { text: 'a', count: -1 });
    expect(errorOf(await client.nextFor('v2'))?.message).toMatch(/^input\.count: /);
    expect(probe.started).toBe(0);
  });

  it('expect mismatching the kind is INVALID_OPERATION_TYPE', async () => {
    const { client, probe } = setup();
    client.request('k1', 'test/echo', { text: 'a' }, { expect: 'stream' });
    client.request('k2', 'test/ticker', { count: 1 }, { expect: 'unary' });
    expect(errorOf(await client.nextFor('k1'))?.code).toBe('INVALID_OPERATION_TYPE');
    expect(errorOf(await client.nextFor('k2'))?.code).toBe('INVALID_OPERATION_TYPE');
    expect(probe.started).toBe(0);
    client.request('k3', 'test/echo', { text: 'a' }, { expect: 'unary' });
    expect((await client.nextFor('k3')).type).toBe('call.responded');
  });
});

describe('handler errors (spec §4.5)', () => {
  it('a declared code goes out as is, with typed details', async () => {
    const { client } = setup();
    client.request('e', 'test/fail', { mode: 'declared' });
    expect(errorOf(await client.nextFor('e'))).toEqual({ code: 'WIDGET_MISSING', message: 'widget w1 is missing', retryable: false, details: { widget: 'w1' } });
  });

  it('declared code with details that fail the schema becomes INTERNAL', async () => {
    const { client } = setup();
    client.request('e', 'test/fail', { mode: 'bad-details' });
    expect(errorOf(await client.nextFor('e'))).toMatchObject({ code: 'INTERNAL', details: { originalCode: 'WIDGET_MISSING' } });
  });

  it('an undeclared code becomes INTERNAL with the original code in details', async () => {
    const { client } = setup();
    client.request('e', 'test/fail', { mode: 'undeclared' });
    expect(errorOf(await client.nextFor('e'))).toMatchObject({ code: 'INTERNAL', retryable: false, details: { originalCode: 'GADGET_BROKEN' } });
  });

  it('a plain exception or rejection becomes INTERNAL with no stack trace', async () => {
    const { client } = setup();
    client.request('p', 'test/fail', { mode: 'plain' });
    client.request('r', 'test/fail', { mode: 'string' });
    const p = errorOf(await client.nextFor('p'));
    expect(p).toEqual({ code: 'INTERNAL', message: 'kaboom', retryable: false });
    expect(JSON.stringify(p)).not.toMatch(/at .*\.ts:\d+/);
    expect(errorOf(await client.nextFor('r'))).toEqual({ code: 'INTERNAL', message: 'rejected', retryable: false });
  });

  it('handlers may raise FORBIDDEN for checks a schema cannot express', async () => {
    const { client } = setup();
    client.request('f', 'test/fail', { mode: 'forbidden' });
    expect(errorOf(await client.nextFor('f'))).toMatchObject({ code: 'FORBIDDEN', message: 'you do not own this' });
  });

  it('an output that fails the output schema ends the call with INTERNAL', async () => {
    const { client } = setup();
    client.request('o', 'test/bad-output', null);
    expect(errorOf(await client.nextFor('o'))).toMatchObject({ code: 'INTERNAL', message: expect.stringMatching(/output\.n/) });
  });
});

describe('limits (spec §9)', () => {
  it('calls over maxCallsInFlight get LIMIT_EXCEEDED and the others, and the connection, carry on', async () => {
    const { registry, probe } = sampleRegistry();
    const conn = new MemoryConnection({ registry, limits: { maxCallsInFlight: 3 } });
    const c = conn.client;
    for (const id of ['l1', 'l2', 'l3']) c.request(id, 'test/ticker', { count: 3, intervalMs: 20 });
    c.request('l4', 'test/ticker', { count: 3, intervalMs: 20 });
    expect(errorOf(await c.nextFor('l4'))).toMatchObject({ code: 'LIMIT_EXCEEDED', retryable: true });
    for (const id of ['l1', 'l2', 'l3']) await c.next((e) => e.id === id && e.type === 'call.completed');
    expect(probe.started).toBe(3);
    c.request('l5', 'test/echo', { text: 'room again' });
    expect((await c.nextFor('l5')).type).toBe('call.responded');
  });

  it('a request over maxInputBytes gets PAYLOAD_TOO_LARGE and the connection survives', async () => {
    const { registry, probe } = sampleRegistry();
    const conn = new MemoryConnection({ registry, limits: { maxInputBytes: 1024 } });
    conn.client.request('big', 'test/echo', { text: 'x'.repeat(2000) });
    expect(errorOf(await conn.client.nextFor('big'))).toMatchObject({ code: 'PAYLOAD_TOO_LARGE', retryable: false });
    conn.client.request('small', 'test/echo', { text: 'x' });
    expect((await conn.client.nextFor('small')).type).toBe('call.responded');
    expect(probe.started).toBe(1);
  });

  it("a session applies its server's maxNestingDepth: with 8, a frame 8 deep is answered and one 9 deep closes with 4400", async () => {
    for (const codec of [codecs.msgpack, codecs.json]) {
      const conn = new MemoryConnection({ registry: sampleRegistry().registry, codec, limits: { maxNestingDepth: 8 } });
      // The envelope and payload are two levels; the input the rest.
      conn.client.request('at', 'test/input-of', nested(6));
      expect(await conn.client.nextFor('at')).toMatchObject({ type: 'call.responded', payload: { output: { inputWas: 'object' } } });
      conn.client.request('over', 'test/input-of', nested(7));
      expect((await conn.client.waitForClose()).code).toBe(closeCodes.UNDECODABLE_FRAME);
    }
  });

  it('the callee never sends deeper than its maxNestingDepth: an output 8 deep is sent, one 9 deep ends its call with INTERNAL, the connection serves on (LIM-2)', async () => {
    const echo = defineOperation({ name: 'test/echo-any', kind: 'query', input: z.unknown(), output: z.unknown(), handler: (input) => input });
    // What arrives at the limit goes back one level deeper.
    const deeper = defineOperation({ name: 'test/deeper', kind: 'query', input: z.unknown(), output: z.unknown(), handler: (input) => [input] });
    for (const codec of [codecs.msgpack, codecs.json]) {
      const conn = new MemoryConnection({ registry: new Registry().register(echo, deeper), codec, limits: { maxNestingDepth: 8 } });
      conn.client.request('at', 'test/echo-any', nested(6));
      expect(await conn.client.nextFor('at')).toMatchObject({ type: 'call.responded', payload: { output: nested(6) } });
      conn.client.request('over', 'test/deeper', nested(6));
      expect(errorOf(await conn.client.nextFor('over'))).toMatchObject({ code: 'INTERNAL', message: expect.stringMatching(/maxNestingDepth 8/) });
      conn.client.request('after', 'test/echo-any', 'still here');
      expect(await conn.client.nextFor('after')).toMatchObject({ type: 'call.responded', payload: { output: 'still here' } });
    }
  });
});

describe('invalid and unexpected frames (spec §3.3, §3.4, §4.6)', () => {
  it('an invalid frame with a readable id gets INVALID_FRAME naming the field; the connection survives', async () => {
    const { client } = setup();
    client.sendBytes(codecs.msgpack.encode({ type: 'call.requested', id: 'bad1', payload: { operationId: 42 } }));
    expect(errorOf(await client.nextFor('bad1'))).toMatchObject({ code: 'INVALID_FRAME', message: expect.stringMatching(/^payload\.operationId: /) });
    client.request('fine', 'test/echo', { text: 'ok' });
    expect((await client.nextFor('fine')).type).toBe('call.responded');
  });

  it('an invalid frame for a live call cancels that call with INVALID_FRAME as its terminal event', async () => {
    const { client, probe } = setup();
    client.request('live', 'test/ticker', { count: 1_000_000, intervalMs: 5 });
    await client.next((e) => e.id === 'live');
    client.sendBytes(codecs.msgpack.encode({ type: 'call.aborted', id: 'live', payload: { junk: 1 } }));
    expect(errorOf(await client.next((e) => e.id === 'live' && e.type === 'call.error'))?.code).toBe('INVALID_FRAME');
    expect(probe.teardowns).toBe(1);
  });

  it('an undecodable frame closes the connection with 4400 and cancels live calls', async () => {
    const { client, probe } = setup();
    client.request('live', 'test/ticker', { count: 1_000_000, intervalMs: 5 });
    await client.next((e) => e.id === 'live');
    client.sendBytes(new Uint8Array([0x82, 0xa1]));
    expect((await client.waitForClose()).code).toBe(closeCodes.UNDECODABLE_FRAME);
    expect(probe.teardowns).toBe(1);
  });

  it('a frame with no readable id closes with 4400', async () => {
    const { client } = setup();
    client.sendBytes(codecs.msgpack.encode({ type: 'call.requested', payload: { operationId: 'test/echo' } }));
    expect((await client.waitForClose()).code).toBe(4400);
  });

  it('unknown event types and callee events from the caller are ignored and counted', async () => {
    const { client, conn } = setup();
    client.sendBytes(codecs.msgpack.encode({ type: 'call.progress', id: 'z', payload: {} }));
    client.sendValue({ type: 'call.completed', id: 'z', payload: {} });
    client.sendValue({ type: 'call.responded', id: 'z', payload: { output: 1 } });
    client.request('fine', 'test/echo', { text: 'ok' });
    expect((await client.nextFor('fine')).type).toBe('call.responded');
    await sleep(10);
    expect(conn.server.stats).toMatchObject({ unknownTypeFrames: 1, wrongDirectionFrames: 2 });
    expect(client.framesFor('z')).toHaveLength(0);
    expect(client.isClosed).toBe(false);
  });

  it('output the codec cannot encode fails that call only', async () => {
    const registry = new Registry().register(
      defineOperation({ name: 'big/int', kind: 'query', input: z.null(), output: z.unknown(), handler: () => ({ n: 10n }) }),
      defineOperation({ name: 'ok', kind: 'query', input: z.null(), output: z.string(), handler: () => 'fine' }),
    );
    const conn = new MemoryConnection({ registry, codec: codecs.json });
    conn.client.request('b', 'big/int', null);
    expect(errorOf(await conn.client.nextFor('b'))).toMatchObject({ code: 'INTERNAL', message: expect.stringMatching(/cannot be encoded with json/) });
    conn.client.request('o', 'ok', null);
    expect((await conn.client.nextFor('o')).type).toBe('call.responded');
    await until(() => conn.server.stats.liveCalls === 0, 'no live calls');
  });
});

describe("a handler's context", () => {
  it("logs with the call's id and operation bound to every line", async () => {
    const { logger, lines } = recordingLogger();
    const registry = new Registry();
    registry.register(
      defineOperation({
        name: 'test/logs',
        kind: 'query',
        input: z.null(),
        output: z.null(),
        handler: (_input, ctx) => {
          ctx.logger.info('handled', { extra: 1 });
          ctx.logger.warn('twice');
          return null;
        },
      }),
    );
    const conn = new MemoryConnection({ registry, logger });
    conn.client.request('log-1', 'test/logs', null);
    expect((await conn.client.nextFor('log-1')).type).toBe('call.responded');
    expect(lines).toEqual([
      { level: 'info', message: 'handled', fields: { callId: 'log-1', operation: 'test/logs', extra: 1 } },
      { level: 'warn', message: 'twice', fields: { callId: 'log-1', operation: 'test/logs' } },
    ]);
  });
});
