import { describe, expect, it } from 'vitest';
import { ReplayBudget } from '../../src/dispatcher/replay-budget.js';
import { ReplayLog } from '../../src/dispatcher/replay-log.js';

// A resumable call's numbered output (§4.9): src/dispatcher/replay-log.ts, alone.

const frame = (bytes: number) => ({ byteLength: bytes });

function sendAll(log: ReplayLog): number[] {
  const sent: number[] = [];
  while (log.hasUnsent) {
    log.nextUnsent((_output, seq) => (sent.push(seq), frame(1)));
    log.markSent();
  }
  return sent;
}

describe('ReplayLog', () => {
  it('numbers items from 1 and keeps them until acknowledged; only sent items can be', () => {
    const budget = new ReplayBudget(1000, 1000);
    const log = new ReplayLog(1000, budget, 'alice');
    for (let i = 0; i < 3; i++) log.append(`item ${i}`, frame(10), false);
    expect(log.nextSeq).toBe(4);
    expect(log.bytes).toBe(30);
    log.ack(3); // nothing was sent yet: nothing goes
    expect(log.bytes).toBe(30);
    expect(sendAll(log)).toEqual([1, 2, 3]);
    log.ack(2);
    expect(log.bytes).toBe(10);
    expect(budget.bytes).toBe(10);
  });

  it('a resume after seq sends what follows again, and says whether it still has it', () => {
    const log = new ReplayLog(1000, new ReplayBudget(1000, 1000), null);
    for (let i = 0; i < 4; i++) log.append(i, frame(10), true);
    sendAll(log);
    log.ack(1);
    expect(log.keepsAfter(0)).toBe(false); // item 1 is gone
    expect(log.keepsAfter(1)).toBe(true);
    expect(log.keepsAfter(5)).toBe(false); // never sent that far
    log.rewind(2);
    expect(sendAll(log)).toEqual([3, 4]);
  });

  it('is full at its own bound or its identity budget, and not once acknowledged', () => {
    const budget = new ReplayBudget(25, 1000);
    const own = new ReplayLog(20, budget, 'a');
    own.append(1, frame(10), true);
    expect(own.full).toBe(false);
    own.append(2, frame(10), true);
    expect(own.full).toBe(true);
    expect(own.overOwnBound).toBe(true);
    const other = new ReplayLog(100, budget, 'a');
    other.append(3, frame(5), true);
    expect(other.full).toBe(true); // the identity's 25 bytes are spent
    expect(other.overOwnBound).toBe(false);
    sendAll(own);
    own.ack(2);
    expect(other.full).toBe(false);
  });

  it('a call taken up from elsewhere numbers on from where its caller is', () => {
    const log = new ReplayLog(100, new ReplayBudget(100, 100), null);
    log.continueAfter(41);
    expect(log.append('x', frame(1), true)).toBe(42);
  });

  it('a sliding log lets go of the oldest sent items past its bound, never unsent ones (HTTP-8)', () => {
    const log = new ReplayLog(40, new ReplayBudget(1000, 1000), null, true);
    for (let i = 0; i < 4; i++) log.append(i, frame(10), true);
    expect(log.bytes).toBe(40); // nothing sent: nothing let go
    sendAll(log);
    expect(log.bytes).toBeLessThanOrEqual(30);
    expect(log.keepsAfter(4 - log.bytes / 10)).toBe(true);
  });

  it('clear gives every byte back to the budget', () => {
    const budget = new ReplayBudget(1000, 1000);
    const log = new ReplayLog(1000, budget, 's');
    log.append(1, frame(10), true);
    log.append(2, frame(10), true);
    log.clear();
    expect(budget.bytes).toBe(0);
    expect(log.hasUnsent).toBe(false);
  });
});
