import { Observable } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { bytesSchema, createDispatcher, defineOperation, Registry, type DispatcherLimits, type Identity } from '../../src/dispatcher/index.js';
import { envelopes, type Envelope } from '../../src/protocol/index.js';
import { IdentityOutbound } from '../../src/dispatcher/identity-outbound.js';
import { MemoryConnection } from '../../src/testing/index.js';
import { sleep, until } from '../support/wait.js';

const KIB = 1024;
const ITEM_BYTES = 64 * KIB;
const BOUND = 1024 * KIB;
const IDENTITIES: Record<string, Identity> = { alice: { subject: 'alice', scopes: ['*'] }, 'alice-2': { subject: 'alice', scopes: [] }, bob: { subject: 'bob', scopes: ['*'] } };

/** A dispatcher whose identities share a 1 MiB output bound (spec §8), and operations whose pulls it counts. */
function server(limits: Partial<DispatcherLimits> = {}) {
  const pulled = new Map<string, number>();
  const item = () => ({ data: new Uint8Array(ITEM_BYTES) });
  const registry = new Registry().register(
    defineOperation({
      name: 'out/pull',
      kind: 'subscription',
      input: z.object({ tag: z.string() }),
      output: z.object({ data: bytesSchema }),
      handler: ({ tag }) =>
        (async function* () {
          for (;;) {
            pulled.set(tag, (pulled.get(tag) ?? 0) + 1);
            yield item();
          }
        })(),
    }),
    defineOperation({
      name: 'out/push',
      kind: 'subscription',
      input: z.object({ items: z.number() }),
      output: z.object({ data: bytesSchema }),
      handler: ({ items }) =>
        new Observable<{ data: Uint8Array }>((subscriber) => {
          for (let i = 0; i < items && !subscriber.closed; i++) subscriber.next(item());
          subscriber.complete();
        }),
    }),
    defineOperation({ name: 'out/answer', kind: 'query', input: z.null(), output: z.object({ data: bytesSchema }), handler: () => item() }),
  );
  const dispatcher = createDispatcher({
    registry,
    authenticate: (token) => IDENTITIES[token],
    // The connection's own bound (BP-4) far above the identity's, so only the identity's holds.
    limits: { maxOutboundBytesPerIdentity: BOUND, maxOutboundBytesPerConnection: 64 * BOUND, ...limits },
  });
  const connection = (token: string | null): MemoryConnection =>
    new MemoryConnection({ registry, dispatcher, identity: token === null ? null : IDENTITIES[token]! });
  return { pulled, connection };
}

const frames = (conn: MemoryConnection, id: string): Envelope[] => conn.client.framesFor(id);
const items = (conn: MemoryConnection, id: string): number => frames(conn, id).filter((f) => f.type === 'call.responded').length;
const end = (conn: MemoryConnection, id: string): Envelope | undefined => frames(conn, id).find((f) => f.type === 'call.completed' || f.type === 'call.error');
const EXCESS = (who: string): RegExp =>
  new RegExp(`^${who} holds \\d+ bytes of output its readers have not taken, its bound of ${BOUND} \\(maxOutboundBytesPerIdentity\\): this call's newest output was dropped$`);

describe("one identity's output over all its connections (spec §8, maxOutboundBytesPerIdentity)", () => {
  it('from half the bound its pull sources wait; at the bound a push item and a unary answer end their calls SLOW_CONSUMER after what they queued; another identity is not held', async () => {
    const { pulled, connection } = server();
    const [a1, a2, bob] = [connection('alice'), connection('alice-2'), connection('bob')];
    a1.pause();
    a2.pause();
    a1.client.request('pull', 'out/pull', { tag: 'alice' });
    await sleep(100);
    // A frame is an item and a few bytes of envelope: the eighth reaches half the bound, and the source waits.
    expect(pulled.get('alice')).toBe(8);

    // The same subject on another connection (another token of it) shares the bound: the eighth item of 12 reaches
    // it. With a byte of credit, all but the first wait for it: counted as well (CR-5).
    a2.client.request('push', 'out/push', { items: 12 }, { credit: 1 });
    a2.client.request('answer', 'out/answer', null);
    bob.client.request('pull', 'out/pull', { tag: 'bob' });
    bob.client.request('answer', 'out/answer', null);
    await until(() => items(bob, 'pull') >= 64 && frames(bob, 'answer').length > 0, "bob's answer and 4 MiB of his stream", 5000);
    expect(frames(bob, 'answer').map((f) => f.type)).toEqual(['call.responded']);
    expect(pulled.get('alice')).toBe(8);

    a2.resume();
    a2.client.sendValue(envelopes.credit('push', 1 << 30));
    await until(() => end(a2, 'push') !== undefined && end(a2, 'answer') !== undefined, "alice's push and answer ended");
    // What it had queued is delivered before its end, all within the bound; only the item that came past it is not.
    expect(items(a2, 'push')).toBe(8);
    expect(end(a2, 'push')!.payload).toMatchObject({ code: 'SLOW_CONSUMER', retryable: true, message: expect.stringMatching(EXCESS('identity "alice"')) });
    expect(frames(a2, 'answer')).toHaveLength(1);
    expect(end(a2, 'answer')!.payload).toMatchObject({ code: 'SLOW_CONSUMER', message: expect.stringMatching(EXCESS('identity "alice"')) });

    // Her first connection's source, held back and not cut, goes on once she has drained to a quarter.
    a1.resume();
    await until(() => (pulled.get('alice') ?? 0) > 64, "alice's stream flowing again");
    expect(end(a1, 'pull')).toBeUndefined();
    for (const [conn, id] of [[a1, 'pull'], [bob, 'pull']] as const) conn.client.abort(id);
  });

  it('frames waiting for credit count toward the bound but make no source wait: a stream its caller reads flows on beside six it does not', async () => {
    // Each call holds at most 128 KiB: six hold three quarters of the bound between them.
    const { pulled, connection } = server({ maxBufferedBytesPerCall: 128 * KIB });
    const alice = connection('alice');
    for (let i = 0; i < 6; i++) alice.client.request(`unread${i}`, 'out/pull', { tag: `unread${i}` }, { credit: 1 });
    await until(() => [0, 1, 2, 3, 4, 5].every((i) => pulled.get(`unread${i}`) === 3), 'six streams full of what waits for credit');
    alice.client.request('read', 'out/pull', { tag: 'read' });
    await until(() => items(alice, 'read') >= 64, 'the stream she reads, 4 MiB of it', 5000);
    // Past the bound, though, what waits for credit stops the next output: one more held stream's worth is too much.
    for (let i = 6; i < 10; i++) alice.client.request(`unread${i}`, 'out/pull', { tag: `unread${i}` }, { credit: 1 });
    await until(() => [6, 7, 8, 9].some((i) => end(alice, `unread${i}`) !== undefined), 'a stream ended past the bound');
    const ended = [6, 7, 8, 9].map((i) => end(alice, `unread${i}`)).find((e) => e !== undefined)!;
    expect(ended.payload).toMatchObject({ code: 'SLOW_CONSUMER', message: expect.stringMatching(EXCESS('identity "alice"')) });
    for (let i = 0; i < 10; i++) alice.client.abort(`unread${i}`);
    alice.client.abort('read');
  });

  it('anonymous callers are one identity: what one holds makes the others wait and drop', async () => {
    const { pulled, connection } = server();
    const [first, second] = [connection(null), connection(null)];
    first.pause();
    first.client.request('pull', 'out/pull', { tag: 'first' });
    first.client.request('push', 'out/push', { items: 12 });
    await sleep(100);
    second.client.request('pull', 'out/pull', { tag: 'second' });
    second.client.request('answer', 'out/answer', null);
    await until(() => end(second, 'answer') !== undefined, 'the answer to the second');
    expect(end(second, 'answer')!.payload).toMatchObject({ code: 'SLOW_CONSUMER', message: expect.stringMatching(EXCESS('anonymous callers')) });
    expect(pulled.get('second') ?? 0).toBeLessThanOrEqual(1);
    first.client.abort('pull');
    second.client.abort('pull');
  });
});

describe('the table of identities behind the bound', () => {
  it('keeps no more than 1,024 that hold nothing, however many callers come and go, and counts on for an account whose entry was dropped', () => {
    const outbound = new IdentityOutbound(BOUND);
    const accounts = Array.from({ length: 5000 }, (_, i) => outbound.account({ subject: `caller-${i}`, scopes: [] }));
    for (const account of accounts) {
      account.addSent(100);
      account.addForCredit(50);
      account.addForCredit(-50);
      account.addSent(-100);
    }
    expect(outbound.identities).toBeLessThanOrEqual(1024);
    // The last caller's entry was dropped as it emptied: its account counts in the identity's entry now.
    const last = accounts.at(-1)!;
    last.addForCredit(BOUND);
    expect(outbound.bytesOf('caller-4999')).toBe(BOUND);
    expect(outbound.account({ subject: 'caller-4999', scopes: [] }).over).toBe(true);
  });
});
