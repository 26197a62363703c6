import { afterEach, describe, expect, it } from 'vitest';
import type { Client } from '../../src/client/index.js';
import { RpcError } from '../../src/protocol/index.js';
import { ServerFixture, transportCases } from '../support/server-fixture.js';
import { until } from '../support/wait.js';

/** spec §9, LIM-3: an identity's live calls are counted over all its connections and transports. */

const tokens = [
  { token: 'alice-token', subject: 'alice', scopes: ['*'] },
  { token: 'bob-token', subject: 'bob', scopes: ['*'] },
];

const refusal = (promise: Promise<unknown>): Promise<{ code: string; retryable: boolean; message: string }> =>
  promise.then(
    () => ({ code: 'answered', retryable: false, message: '' }),
    (error: unknown) => (error instanceof RpcError ? { code: error.code, retryable: error.retryable, message: error.message } : { code: String(error), retryable: false, message: '' }),
  );

describe('maxCallsPerIdentity (LIM-3)', () => {
  const fx = new ServerFixture();
  const aborts: AbortController[] = [];
  afterEach(async () => {
    for (const a of aborts.splice(0)) a.abort();
    await fx.stop();
  });

  /** A call that stays live until aborted. */
  const hold = (client: Client, token?: string): AbortController => {
    const abort = new AbortController();
    aborts.push(abort);
    client.call('test/sleep', { ms: 60_000 }, { signal: abort.signal, ...(token ? { token } : {}) }).catch(() => undefined);
    return abort;
  };

  it("counts an identity's calls over its WebSocket and WebTransport connections, refuses the next with LIMIT_EXCEEDED (and HTTP 429), frees a place when a call ends, and never blocks another identity", async () => {
    await fx.start({ tokens, limits: { maxCallsPerIdentity: 3 } });
    const aliceWs = await fx.client(transportCases[0]!, { token: 'alice-token' });
    // WebTransport carries the token per call (auth_token).
    const aliceWt = await fx.client(transportCases[2]!, { token: 'alice-token' });
    const bob = await fx.client(transportCases[0]!, { token: 'bob-token' });
    const first = hold(aliceWs);
    hold(aliceWs);
    hold(aliceWt);
    await until(() => fx.liveCalls() === 3, "alice's three calls live");

    const refused = await refusal(aliceWt.call('test/echo', { text: 'x' }));
    expect(refused).toMatchObject({ code: 'LIMIT_EXCEEDED', retryable: true });
    expect(refused.message).toContain('maxCallsPerIdentity');
    const overHttp = await fetch(`http://127.0.0.1:${new URL(fx.server.wsUrl).port}/call/test/echo`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer alice-token' },
      body: JSON.stringify({ text: 'x' }),
    });
    expect(overHttp.status).toBe(429);
    expect(((await overHttp.json()) as { diagnostics: { code: string }[] }).diagnostics[0]!.code).toBe('LIMIT_EXCEEDED');

    // Bob is not alice: her cap leaves him alone, on every transport.
    expect(await bob.call('test/echo', { text: 'bob' })).toEqual({ text: 'bob' });
    expect(await aliceWt.call('test/echo', { text: 'bob' }, { token: 'bob-token' })).toEqual({ text: 'bob' });

    first.abort();
    await until(() => fx.liveCalls() === 2, 'the aborted call ended');
    expect(await aliceWs.call('test/echo', { text: 'again' })).toEqual({ text: 'again' });
  });

  it('every anonymous caller is one identity', async () => {
    await fx.start({ tokens, limits: { maxCallsPerIdentity: 2 } });
    const one = await fx.client(transportCases[0]!);
    const two = await fx.client(transportCases[0]!);
    hold(one);
    hold(two);
    await until(() => fx.liveCalls() === 2, 'two anonymous calls live');
    expect((await refusal(two.call('test/echo', { text: 'x' }))).code).toBe('LIMIT_EXCEEDED');
    expect(await one.call('test/echo', { text: 'alice' }, { token: 'alice-token' })).toEqual({ text: 'alice' });
  });
});
