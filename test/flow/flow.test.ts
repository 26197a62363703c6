import { describe, expect, it } from 'vitest';
import { AsyncQueue, nextTurn, ReceiveWindow, SendCredit, Wakeup } from '../../src/flow/index.js';

describe('ReceiveWindow: the receiver grants back what its consumer took, in steps', () => {
  it('grants nothing until a step has been taken, then all that was taken', () => {
    const grants: number[] = [];
    const window = new ReceiveWindow(100, 50, (bytes) => grants.push(bytes));
    window.arrived(30);
    window.arrived(30);
    window.take(30);
    expect(grants).toEqual([]);
    window.take(30);
    expect(grants).toEqual([60]);
    expect(window.credit).toBe(100);
  });

  it('counts the peer out of credit once what arrived reaches the window, and flushes the rest on demand', () => {
    const grants: number[] = [];
    const window = new ReceiveWindow(100, 50, (bytes) => grants.push(bytes));
    window.arrived(60);
    expect(window.hasCredit).toBe(true);
    window.arrived(40);
    expect(window.hasCredit).toBe(false);
    window.take(10);
    window.flush();
    expect(grants).toEqual([10]);
    expect(window.credit).toBe(10);
  });

  it('renew gives the peer a whole window afresh but keeps what the consumer took and has not granted', () => {
    const grants: number[] = [];
    const window = new ReceiveWindow(100, 50, (bytes) => grants.push(bytes));
    window.arrived(90);
    window.take(30);
    window.renew();
    expect(window.credit).toBe(100);
    window.take(20);
    expect(grants).toEqual([50]);
  });
});

describe('SendCredit: the sender spends while positive and waits for a grant', () => {
  it('reset sets the balance to what the peer counts and wakes a sender waiting for it', async () => {
    const credit = new SendCredit(5);
    credit.charge(20);
    const waiting = credit.untilCredit();
    credit.reset(7);
    expect(await waiting).toBe(true);
    expect(credit.available).toBe(7);
    credit.reset(-3);
    expect(credit.hasCredit).toBe(false);
  });

  it('waits at zero, resumes on a grant, and ends a wait when stopped', async () => {
    const credit = new SendCredit(10);
    credit.charge(15);
    expect(credit.hasCredit).toBe(false);
    let resumed: boolean | undefined;
    const waiting = credit.untilCredit().then((ok) => (resumed = ok));
    await Promise.resolve();
    expect(resumed).toBeUndefined();
    credit.grant(4);
    await Promise.resolve();
    expect(resumed).toBeUndefined(); // -1: still not positive
    credit.grant(2);
    await waiting;
    expect(resumed).toBe(true);
    credit.charge(1);
    const stopped = credit.untilCredit();
    credit.stop();
    expect(await stopped).toBe(false);
  });
});

describe('AsyncQueue and Wakeup', () => {
  it('delivers in order, then the end, then the failure it ended with', async () => {
    const queue = new AsyncQueue<number>();
    const seen: number[] = [];
    const loop = (async () => {
      for await (const n of queue) seen.push(n);
    })();
    queue.push(1);
    queue.push(2);
    await new Promise<void>((resolve) => nextTurn(resolve));
    queue.push(3);
    queue.end();
    await loop;
    expect(seen).toEqual([1, 2, 3]);

    const failing = new AsyncQueue<number>();
    failing.push(7);
    failing.end(new Error('boom'));
    expect(await failing.next()).toEqual({ value: 7, done: false });
    await expect(failing.next()).rejects.toThrow('boom');
  });

  it('take hands what is there now without waiting: an item, the end, the failure, or undefined', () => {
    const queue = new AsyncQueue<number>();
    expect(queue.take()).toBeUndefined();
    queue.push(1);
    queue.push(2);
    expect(queue.take()).toEqual({ value: 1, done: false });
    expect(queue.take()).toEqual({ value: 2, done: false });
    expect(queue.take()).toBeUndefined();
    queue.push(3);
    queue.end(new Error('broken'));
    expect(queue.take()).toEqual({ value: 3, done: false });
    expect(() => queue.take()).toThrow('broken');
    const ended = new AsyncQueue<number>();
    ended.end();
    expect(ended.take()).toEqual({ value: undefined, done: true });
    const closed = new AsyncQueue<number>();
    closed.push(4);
    closed.close();
    expect(closed.take()).toEqual({ value: undefined, done: true });
  });

  it('close drops what is queued and ends the loop at once', async () => {
    const queue = new AsyncQueue<number>();
    queue.push(1);
    queue.close();
    expect(await queue.next()).toEqual({ value: undefined, done: true });
    queue.push(2);
    expect(queue.size).toBe(0);
  });

  it('a wake with nobody waiting is not kept', async () => {
    const wakeup = new Wakeup();
    wakeup.wake();
    let woken = false;
    void wakeup.wait().then(() => (woken = true));
    await new Promise<void>((resolve) => nextTurn(resolve));
    expect(woken).toBe(false);
    wakeup.wake();
    await Promise.resolve();
    expect(woken).toBe(true);
  });

  it('wakes every waiter, each once', async () => {
    const wakeup = new Wakeup();
    const woken: string[] = [];
    void wakeup.wait().then(() => woken.push('a'));
    void wakeup.wait().then(() => woken.push('b'));
    wakeup.wake();
    await Promise.resolve();
    expect(woken).toEqual(['a', 'b']);
    wakeup.wake();
    await Promise.resolve();
    expect(woken).toEqual(['a', 'b']);
  });

  it('says whether someone waits, until woken', () => {
    const wakeup = new Wakeup();
    expect(wakeup.waiting).toBe(false);
    void wakeup.wait();
    expect(wakeup.waiting).toBe(true);
    wakeup.wake();
    expect(wakeup.waiting).toBe(false);
  });
});
