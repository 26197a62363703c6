import { describe, expect, it, vi } from 'vitest';
import { InputPump } from '../../src/client/input-pump.js';
import { SendCredit } from '../../src/flow/index.js';
import type { RpcError } from '../../src/protocol/index.js';

/** A source that records how far it was read, and whether it was released. */
function source(items: readonly string[], failAt?: number) {
  const state = { read: 0, returned: false };
  const iterable: AsyncIterable<string> = {
    [Symbol.asyncIterator]: () => ({
      next: async () => {
        if (state.read === failAt) throw new Error('disk gone');
        return state.read < items.length ? { value: items[state.read++]!, done: false } : { value: undefined, done: true };
      },
      return: async () => {
        state.returned = true;
        return { value: undefined, done: true };
      },
    }),
  };
  return { iterable, state };
}

/** A pump whose items each cost 10 bytes of the credit, as the call charges them. */
function pump(items: readonly string[], credit: SendCredit, failAt?: number) {
  const sent: string[] = [];
  const failures: RpcError[] = [];
  const { iterable, state } = source(items, failAt);
  const p = new InputPump(
    iterable,
    credit,
    (item) => {
      sent.push(item as string);
      credit.charge(10);
    },
    () => sent.push('<end>'),
    (error) => failures.push(error),
  );
  return { pump: p, sent, failures, state };
}

describe('InputPump: the input stream, as the callee grants credit', () => {
  it('reads nothing before the call is admitted, then an item while the credit is positive, and the end', async () => {
    const credit = new SendCredit();
    const p = pump(['a', 'b', 'c'], credit);
    credit.grant(15);
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(p.state.read).toBe(0);
    p.pump.start();
    await vi.waitFor(() => expect(p.sent).toEqual(['a', 'b']));
    // Out of credit (15 - 20 < 0): the source is not read ahead.
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(p.state.read).toBe(2);
    credit.grant(10);
    await vi.waitFor(() => expect(p.sent).toEqual(['a', 'b', 'c']));
    // Even the source's end is read only with credit.
    credit.grant(10);
    await vi.waitFor(() => expect(p.sent).toEqual(['a', 'b', 'c', '<end>']));
  });

  it("goes on when a resumed callee's count gives it credit again", async () => {
    const credit = new SendCredit(5);
    const p = pump(['a', 'b'], credit);
    p.pump.start();
    await vi.waitFor(() => expect(p.sent).toEqual(['a']));
    credit.reset(30);
    await vi.waitFor(() => expect(p.sent).toEqual(['a', 'b', '<end>']));
  });

  it('stopped, it reads no more and releases the source; a source that fails fails the call', async () => {
    const credit = new SendCredit(5);
    const p = pump(['a', 'b'], credit);
    p.pump.start();
    await vi.waitFor(() => expect(p.sent).toEqual(['a']));
    p.pump.stop();
    credit.grant(100);
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(p.sent).toEqual(['a']);
    expect(p.state.returned).toBe(true);

    const failing = pump(['a', 'b'], new SendCredit(100), 1);
    failing.pump.start();
    await vi.waitFor(() => expect(failing.failures.map((e) => [e.code, e.message])).toEqual([['INTERNAL', 'the input source failed: disk gone']]));
    expect(failing.sent).toEqual(['a']);
  });
});
