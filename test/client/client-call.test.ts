import { describe, expect, it } from 'vitest';
import type { AcknowledgementPolicy } from '../../src/client/index.js';
import { ClientCall, type CallKeeper } from '../../src/client/client-call.js';
import { nextTurn } from '../../src/flow/index.js';
import type { RpcError} from '../../src/protocol/index.js';
import { envelopes, type Envelope } from '../../src/protocol/index.js';
import { FakeConnection } from './fake-connection.js';

const ID = 'c1';
const WINDOW = 1000;
const turn = (): Promise<void> => new Promise((resolve) => nextTurn(resolve));
const item = (seq: number, output: unknown = seq): Envelope => ({ type: 'call.responded', id: ID, payload: { output, seq } });
const credit = (bytes: number, seq?: number): Envelope => ({ type: 'call.credit', id: ID, payload: seq === undefined ? { bytes } : { bytes, seq } });

/** A stream call on `connection`, and what its client heard. */
function stream(connection: FakeConnection, options: { acknowledgements?: AcknowledgementPolicy; keeper?: CallKeeper; request?: Envelope } = {}) {
  const frames: Envelope[] = [];
  const failures: RpcError[] = [];
  const request = options.request ?? envelopes.requested(ID, { operationId: 'op', input: null, expect: 'stream', credit: WINDOW, resume: { grace_ms: 1000 } });
  const call = new ClientCall(
    request,
    { frame: (e) => frames.push(e), failed: (error) => failures.push(error) },
    { windowBytes: WINDOW, ...(options.acknowledgements ? { acknowledgements: options.acknowledgements } : {}), ...(request.type === 'call.resume' ? { graceMs: 1000 } : {}) },
  );
  if (options.keeper) call.keptBy(options.keeper);
  call.attach(connection);
  return { call, frames, failures };
}

/** A keeper that records what the call asks of it. */
function recordingKeeper() {
  const log: string[] = [];
  const keeper: CallKeeper = {
    detached: (_call, error) => log.push(`detached: ${error.message}`),
    resumed: () => log.push('resumed'),
    release: () => log.push('release'),
    forget: (id) => log.push(`forget ${id}`),
  };
  return { keeper, log };
}

/** A resumable stream, kept by a keeper, that sent `items` as input on `first` with credit to spare. */
function resumableWithInput(items: string[]) {
  const first = new FakeConnection();
  const { call } = stream(first, { keeper: recordingKeeper().keeper });
  first.deliver(envelopes.resumable(ID, 'tok', 1000));
  first.deliver(credit(1000));
  for (const x of items) call.sendInput(x);
  return { call, first };
}

describe('ClientCall: one call, its numbers, acknowledgements, input and credit', () => {
  it('numbers its input once resumable and keeps it until the callee acknowledges it; before that it sends it as given', () => {
    const connection = new FakeConnection();
    const { call } = stream(connection);
    connection.deliver(credit(500));
    call.sendInput('plain');
    connection.deliver(envelopes.resumable(ID, 'tok', 1000));
    call.sendInput('a');
    call.sendInput('b');
    call.sendEnd();
    expect(connection.of('call.input').map((e) => e.payload)).toEqual([{ item: 'plain' }, { item: 'a', seq: 1 }, { item: 'b', seq: 2 }]);
    expect(connection.of('call.end').map((e) => e.payload)).toEqual([{ seq: 3 }]);
    // Each item sent is charged to the call's input credit, in encoded bytes (CR-2).
    const charged = connection.of('call.input').reduce((sum, e) => sum + connection.size(e), 0) + connection.size(connection.of('call.end')[0]!);
    expect(call.inputCredit.available).toBe(500 - charged);
  });

  it('hands on each output item once: one sent again after a resume is dropped', () => {
    const connection = new FakeConnection();
    const { frames } = stream(connection);
    connection.deliver(envelopes.resumable(ID, 'tok', 1000));
    for (const seq of [1, 2, 1, 2, 3]) connection.deliver(item(seq));
    expect(frames.filter((e) => e.type === 'call.responded').map((e) => e.payload)).toEqual([1, 2, 3].map((seq) => ({ output: seq, seq })));
  });

  it('acknowledges what arrived once per burst, at the end of the turn, and grants output credit with the acknowledgement', async () => {
    const connection = new FakeConnection();
    const { call } = stream(connection);
    connection.deliver(envelopes.resumable(ID, 'tok', 1000));
    for (const seq of [1, 2, 3]) connection.deliver(item(seq, 'x'.repeat(200)));
    expect(connection.of('call.credit')).toEqual([]);
    await turn();
    expect(connection.of('call.credit').map((e) => e.payload)).toEqual([{ bytes: 0, seq: 3 }]);
    // CR-4: the consumer's takes are granted back in half-window steps, with the acknowledgement.
    call.take(300);
    call.take(300);
    connection.deliver(item(4));
    call.take(10);
    await turn();
    expect(connection.of('call.credit').map((e) => e.payload)).toEqual([
      { bytes: 0, seq: 3 },
      { bytes: 600, seq: 3 },
      { bytes: 0, seq: 4 },
    ]);
  });

  it('acknowledges no further than its policy allows, and more as the policy raises its limit', async () => {
    const connection = new FakeConnection();
    let upTo = 1;
    let acknowledge = (): void => undefined;
    const policy: AcknowledgementPolicy = { limit: (received) => Math.min(received, upTo), watch: (f) => (acknowledge = f), ended: (forget) => forget() };
    stream(connection, { acknowledgements: policy });
    connection.deliver(envelopes.resumable(ID, 'tok', 1000));
    for (const seq of [1, 2, 3]) connection.deliver(item(seq));
    await turn();
    expect(connection.of('call.credit').map((e) => e.payload)).toEqual([{ bytes: 0, seq: 1 }]);
    upTo = 3;
    acknowledge();
    await turn();
    expect(connection.of('call.credit').map((e) => e.payload)).toEqual([
      { bytes: 0, seq: 1 },
      { bytes: 0, seq: 3 },
    ]);
  });

  it('tells the callee to forget an ended stream on its own channel, or later, when the policy says so, on the connection', () => {
    const atOnce = new FakeConnection();
    const first = stream(atOnce);
    atOnce.deliver(envelopes.resumable(ID, 'tok', 1000));
    atOnce.deliver(envelopes.completed(ID));
    expect(atOnce.sent.map((e) => e.type)).toEqual(['call.requested', 'call.aborted']);
    expect(first.frames.at(-1)?.type).toBe('call.completed');

    const later = new FakeConnection();
    let forget = (): void => undefined;
    const { call } = stream(later, { acknowledgements: { limit: (r) => r, watch: () => undefined, ended: (f) => (forget = f) } });
    later.deliver(envelopes.resumable(ID, 'tok', 1000));
    later.deliver(envelopes.completed(ID));
    call.done();
    expect(later.of('call.aborted')).toEqual([]);
    forget();
    expect(later.of('call.aborted')).toEqual([envelopes.aborted(ID)]);
  });

  it('ends a stream whose callee sends past its credit (CR-7): aborted at the callee, CREDIT_EXCEEDED here, the item not handed on', () => {
    const connection = new FakeConnection();
    const { frames, failures } = stream(connection);
    const big = { type: 'call.responded', id: ID, payload: { output: 'x'.repeat(40 * 1024) } } as Envelope;
    connection.deliver(big);
    connection.deliver(big);
    expect(failures).toEqual([]);
    connection.deliver(big);
    expect(failures.map((e) => e.code)).toEqual(['CREDIT_EXCEEDED']);
    expect(frames.filter((e) => e.type === 'call.responded')).toHaveLength(2);
    expect(connection.of('call.aborted')).toHaveLength(1);
  });

  it('resumes after the last item that arrived, sends again the input not acknowledged, and counts the credit as the callee does', () => {
    const first = new FakeConnection();
    const { keeper, log } = recordingKeeper();
    const { call, frames } = stream(first, { keeper });
    first.deliver(envelopes.resumable(ID, 'tok', 1000));
    first.deliver(credit(1000));
    for (const x of ['a', 'b', 'c']) call.sendInput(x);
    first.deliver(credit(0, 1)); // the callee has input 1
    first.deliver(item(1));
    first.deliver(item(2));
    first.drop();
    expect(log).toEqual(['detached: the connection was lost']);
    expect(call.detached).toBe(true);
    call.sendInput('d'); // while detached: charged, sent with the resume

    const second = new FakeConnection();
    call.attach(second);
    expect(second.sent).toEqual([envelopes.resume(ID, { token: 'tok', seq: 2, credit: WINDOW })]);
    second.deliver(envelopes.resumed(ID, 2, 400));
    const resent = second.of('call.input');
    expect(resent.map((e) => e.payload)).toEqual([
      { item: 'c', seq: 3 },
      { item: 'd', seq: 4 },
    ]);
    expect(call.inputCredit.available).toBe(400 - resent.reduce((sum, e) => sum + second.size(e), 0));
    expect(frames.at(-1)?.type).toBe('call.resumed');
    expect(log.at(-1)).toBe('resumed');
    // The replay of what arrived before the loss is dropped.
    second.deliver(item(2));
    second.deliver(item(3));
    expect(frames.filter((e) => e.type === 'call.responded').map((e) => e.payload)).toEqual([1, 2, 3].map((seq) => ({ output: seq, seq })));
  });

  it('keeps the input a resume says the callee has until a credit acknowledges it: a callee that dies holding it (a gateway) is sent it again by the next', () => {
    const { call, first } = resumableWithInput(['a', 'b', 'c']);
    first.deliver(credit(0, 1));
    first.drop();
    // Back at the same gateway, which has received input 3 but passed on only input 1.
    const second = new FakeConnection();
    call.attach(second);
    second.deliver(envelopes.resumed(ID, 3, 1000));
    expect(second.of('call.input'), 'nothing it has goes again').toEqual([]);
    second.drop();
    // That gateway died: the next takes the call up from the agent, which has input 1.
    const third = new FakeConnection();
    call.attach(third);
    third.deliver(envelopes.resumed(ID, 1, 1000));
    expect(third.of('call.input').map((e) => e.payload)).toEqual([
      { item: 'b', seq: 2 },
      { item: 'c', seq: 3 },
    ]);
    third.deliver(credit(0, 3));
    third.drop();
    const fourth = new FakeConnection();
    call.attach(fourth);
    fourth.deliver(envelopes.resumed(ID, 1, 1000));
    expect(fourth.of('call.input'), 'a credit acknowledged them: they are gone').toEqual([]);
  });

  it('sends the input a resume asks for again only as the callee grants credit (CR-2): the rest, and input that comes after, waits in order', () => {
    const { call, first } = resumableWithInput(['a', 'b', 'c', 'd']);
    // The callee that took them died holding them: the next has none of them, and grants less than they are.
    first.drop();
    const second = new FakeConnection();
    call.attach(second);
    const oneItem = second.size({ type: 'call.input', id: ID, payload: { item: 'a', seq: 1 } });
    second.deliver(envelopes.resumed(ID, 0, oneItem + 1));
    expect(second.of('call.input').map((e) => e.payload), 'sent while the credit is positive: one frame past it at most').toEqual([
      { item: 'a', seq: 1 },
      { item: 'b', seq: 2 },
    ]);
    expect(call.inputCredit.hasCredit, 'the source is not read while input waits').toBe(false);
    call.sendInput('e');
    call.sendEnd();
    expect(second.of('call.input')).toHaveLength(2);
    second.deliver(credit(oneItem));
    expect(second.of('call.input').map((e) => e.payload)).toEqual([1, 2, 3].map((seq) => ({ item: 'abc'[seq - 1], seq })));
    second.deliver(credit(10 * oneItem));
    expect(second.of('call.input').map((e) => (e.payload as { seq: number }).seq)).toEqual([1, 2, 3, 4, 5]);
    expect(second.of('call.end').map((e) => e.payload)).toEqual([{ seq: 6 }]);
    // The client charges call.end too, which the callee does not: its count is lower by that much.
    const sent = [...second.of('call.input'), ...second.of('call.end')].reduce((sum, e) => sum + second.size(e), 0);
    expect(call.inputCredit.available, 'the credit as the callee counts it, less the end').toBe(oneItem + 1 + oneItem + 10 * oneItem - sent);
  });

  it('input read before a resume spent the credit waits for more: a pump mid-read when the connection was lost does not send past it (CR-2)', () => {
    const { call, first } = resumableWithInput(['a', 'b']);
    // The pump saw credit and began a read; meanwhile the connection is lost and the call resumed.
    first.drop();
    const second = new FakeConnection();
    call.attach(second);
    const oneItem = second.size({ type: 'call.input', id: ID, payload: { item: 'a', seq: 1 } });
    second.deliver(envelopes.resumed(ID, 0, oneItem + 1));
    expect(second.of('call.input')).toHaveLength(2);
    // The read ends: the callee's count is below zero, so it waits.
    call.sendInput('c');
    expect(second.of('call.input').map((e) => e.payload), 'nothing past the credit').toEqual([
      { item: 'a', seq: 1 },
      { item: 'b', seq: 2 },
    ]);
    second.deliver(credit(oneItem));
    expect(second.of('call.input').map((e) => e.payload)).toEqual([1, 2, 3].map((seq) => ({ item: 'abc'[seq - 1], seq })));
    // The end takes no credit: it goes at once, however far below zero the count is.
    expect(call.inputCredit.hasCredit).toBe(false);
    call.sendEnd();
    expect(second.of('call.end').map((e) => e.payload)).toEqual([{ seq: 4 }]);
  });

  it('a call not resumable fails with its connection; one aborted while detached is aborted once attached again', () => {
    const plain = new FakeConnection();
    const { keeper } = recordingKeeper();
    const a = stream(plain, { keeper });
    plain.drop();
    expect(a.failures.map((e) => e.message)).toEqual(['the connection was lost']);

    const first = new FakeConnection();
    const b = stream(first, { keeper });
    first.deliver(envelopes.resumable(ID, 'tok', 1000));
    first.drop();
    b.call.abort();
    const second = new FakeConnection();
    b.call.attach(second);
    expect(second.sent.map((e) => e.type)).toEqual(['call.resume', 'call.aborted']);
  });

  it("refusing a resume: a call taken up by token hears the callee's answer; a call of its own is lost UNAVAILABLE", () => {
    const taken = new FakeConnection();
    const resume = envelopes.resume(ID, { token: 'tok', seq: 5, credit: WINDOW });
    const t = stream(taken, { request: resume });
    expect(taken.sent).toEqual([resume]);
    taken.deliver(envelopes.error(ID, { code: 'NOT_FOUND', message: 'no such call', retryable: false }));
    expect(t.frames.map((e) => e.type)).toEqual(['call.error']);
    expect(t.failures).toEqual([]);

    const first = new FakeConnection();
    const { keeper } = recordingKeeper();
    const own = stream(first, { keeper });
    first.deliver(envelopes.resumable(ID, 'tok', 1000));
    first.drop();
    const second = new FakeConnection();
    own.call.attach(second);
    second.deliver(envelopes.error(ID, { code: 'NOT_FOUND', message: 'no such call', retryable: false }));
    expect(own.failures.map((e) => [e.code, e.message])).toEqual([['UNAVAILABLE', 'the connection was lost and the call could not be resumed: no such call']]);
  });
});
