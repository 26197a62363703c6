import { describe, expect, it, vi } from 'vitest';
import { Client, ResumingConnection, type ConnectionEvent } from '../../src/client/index.js';
import { envelopes, RpcError, type Envelope } from '../../src/protocol/index.js';
import { FakeConnection } from './fake-connection.js';

const item = (id: string, seq: number): Envelope => ({ type: 'call.responded', id, payload: { output: seq, seq } });

/** A client over a ResumingConnection whose dials return the connections a test hands it, in order. */
function resumingClient() {
  const connections = [new FakeConnection()];
  const dials: ((c: FakeConnection | Error) => void)[] = [];
  const connection = new ResumingConnection(connections[0]!, {
    dial: () =>
      new Promise((resolve, reject) =>
        dials.push((c) => {
          if (c instanceof Error) return reject(c);
          connections.push(c);
          resolve(c);
        }),
      ),
    initialDelayMs: 1,
    maxDelayMs: 1,
  });
  const client = new Client(connection, undefined, { graceMs: 1000 });
  const events: ConnectionEvent[] = [];
  connection.onEvent = (event) => {
    events.push(event);
    client.emit(event);
  };
  /** Answers the next dial with a new connection, once the connection dials. */
  const redial = async (): Promise<FakeConnection> => {
    await vi.waitFor(() => expect(dials.length).toBeGreaterThan(0));
    const next = new FakeConnection();
    dials.shift()!(next);
    await vi.waitFor(() => expect(next.sent.length).toBeGreaterThan(0));
    return next;
  };
  return { client, connection, connections, events, redial };
}

/** Reads `stream` into `into` until it ends, and then its end. */
function collect(stream: AsyncIterable<unknown>, into: unknown[]): Promise<unknown> {
  return (async () => {
    try {
      for await (const value of stream) into.push(value);
      return 'completed';
    } catch (error) {
      return error;
    }
  })();
}

describe('ResumingConnection: reconnects, and its calls resume themselves', () => {
  it('dials again when the carrier breaks, resumes the stream after its last item, and the consumer sees each item once', async () => {
    const { client, connections, events, redial } = resumingClient();
    const seen: unknown[] = [];
    const done = collect(client.iterate('op', null, { id: 's1' }), seen);
    const first = connections[0]!;
    first.deliver(envelopes.resumable('s1', 'tok', 1000));
    first.deliver(envelopes.credit('s1', 0));
    first.deliver(item('s1', 1));
    first.deliver(item('s1', 2));
    await vi.waitFor(() => expect(seen).toEqual([1, 2]));
    first.drop();
    const second = await redial();
    expect(events[0]).toEqual({ type: 'reconnecting', calls: 1, reason: 'the connection was lost' });
    expect(second.sent[0]).toMatchObject({ type: 'call.resume', id: 's1', payload: { token: 'tok', seq: 2 } });
    second.deliver(envelopes.resumed('s1', 0, 0));
    expect(events.at(-1)).toEqual({ type: 'resumed', id: 's1' });
    for (const seq of [2, 3]) second.deliver(item('s1', seq));
    second.deliver(envelopes.completed('s1'));
    expect(await done).toBe('completed');
    expect(seen).toEqual([1, 2, 3]);
  });

  it("sends again, after a resume, the input the callee had not, and goes on with the callee's count of credit", async () => {
    const { client, connections, redial } = resumingClient();
    const input = (async function* () {
      for (const x of ['a', 'b', 'c', 'd']) yield x;
    })();
    void collect(client.iterate('op', null, { id: 's2', input }), []);
    const first = connections[0]!;
    first.deliver(envelopes.resumable('s2', 'tok', 1000));
    first.deliver(envelopes.credit('s2', 1)); // room for one item
    await vi.waitFor(() => expect(first.of('call.input')).toHaveLength(1));
    first.drop();
    const second = await redial();
    // The callee never had item 1, and grants room for two items now.
    second.deliver(envelopes.resumed('s2', 0, 2 * second.size({ type: 'call.input', id: 's2', payload: { item: 'a', seq: 1 } }) - 1));
    await vi.waitFor(() => expect(second.of('call.input').map((e) => e.payload)).toEqual([{ item: 'a', seq: 1 }, { item: 'b', seq: 2 }]));
    // Out of the callee's credit again: nothing more until it grants.
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(second.of('call.input')).toHaveLength(2);
    second.deliver(envelopes.credit('s2', 1000));
    await vi.waitFor(() => expect(second.of('call.end').map((e) => e.payload)).toEqual([{ seq: 5 }]));
    expect(second.of('call.input').map((e) => (e.payload as { seq: number }).seq)).toEqual([1, 2, 3, 4]);
  });

  it('a unary call started while no connection is up waits for the next; one on a lost connection fails with it', async () => {
    const { client, connections, redial } = resumingClient();
    const lost = client.call('op', 1).catch((error: unknown) => error);
    connections[0]!.drop();
    expect(await lost).toMatchObject({ code: 'UNAVAILABLE', message: 'the connection was lost' });
    const waiting = client.call('op', 2);
    const second = await redial();
    expect(second.sent[0]).toMatchObject({ type: 'call.requested', payload: { operationId: 'op', input: 2 } });
    second.deliver(envelopes.responded(second.sent[0]!.id, 'ok'));
    expect(await waiting).toBe('ok');
  });

  it('takes up a call by its token through the connection, with no other way in', async () => {
    const { client, connections } = resumingClient();
    const seen: unknown[] = [];
    void collect(client.takeUp({ id: 't1', token: 'tok', seq: 7, graceMs: 1000 }), seen);
    expect(connections[0]!.sent).toEqual([envelopes.resume('t1', { token: 'tok', seq: 7, credit: 1024 * 1024 })]);
    connections[0]!.deliver(envelopes.resumed('t1', 0, 0));
    connections[0]!.deliver(item('t1', 7));
    connections[0]!.deliver(item('t1', 8));
    await vi.waitFor(() => expect(seen).toEqual([8]));
    const plain = new Client(new FakeConnection());
    expect(() => plain.takeUp({ id: 't2', token: 'tok', seq: 0, graceMs: 1000 })).toThrow('taking up a call needs a client made with resume');
  });

  it('close(reason) fails every call with the reason at once and dials no more', async () => {
    const { client, connection, connections, events } = resumingClient();
    const a = collect(client.iterate('op', null, { id: 'a' }), []);
    const b = collect(client.iterate('op', null, { id: 'b' }), []);
    connections[0]!.deliver(envelopes.resumable('a', 'tok', 1000));
    await connection.close(new RpcError('UNAVAILABLE', 'host h1 is gone'));
    for (const end of [await a, await b]) expect(end).toMatchObject({ code: 'UNAVAILABLE', message: 'host h1 is gone' });
    expect(events).toEqual([]);
  });
});
