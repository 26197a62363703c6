import { describe, expect, it } from 'vitest';
import { FairQueue } from '../../src/flow/index.js';

describe('FairQueue', () => {
  it('gives each key with items a turn in every round, each key\'s items in order', () => {
    const queue = new FairQueue<string>();
    for (let i = 0; i < 5; i++) queue.push('flood', `f${i}`);
    queue.push('quiet', 'q0');
    queue.push('other', 'o0');
    queue.push('other', 'o1');
    const order: string[] = [];
    for (let step = queue.take(); step && !step.done; step = queue.take()) {
      order.push(step.value);
      // A key that comes back while the round goes on has its next turn in the next round.
      if (step.value === 'q0') queue.push('quiet', 'q1');
    }
    expect(order).toEqual(['f0', 'q0', 'o0', 'f1', 'q1', 'o1', 'f2', 'f3', 'f4']);
    expect(queue.size).toBe(0);
  });

  it('a key that comes while the loop is busy with another\'s item is next: the busy key goes back in line behind it', () => {
    const queue = new FairQueue<string>();
    queue.push('flood', 'f0');
    queue.push('flood', 'f1');
    expect(queue.take()?.value).toBe('f0');
    queue.push('quiet', 'q0');
    expect(queue.take()?.value).toBe('q0');
    expect(queue.take()?.value).toBe('f1');
  });

  it('counts what each key has waiting', () => {
    const queue = new FairQueue<number>();
    queue.push('a', 1);
    queue.push('a', 2);
    queue.push('b', 3);
    expect([queue.sizeOf('a'), queue.sizeOf('b'), queue.sizeOf('c'), queue.size]).toEqual([2, 1, 0, 3]);
    queue.take();
    expect(queue.sizeOf('a')).toBe(1);
  });

  it('ends after what is queued, with the error when given; close drops what is queued', async () => {
    const queue = new FairQueue<number>();
    queue.push('a', 1);
    queue.end(new Error('gone'));
    queue.push('a', 2);
    expect(await queue.next()).toEqual({ value: 1, done: false });
    await expect(queue.next()).rejects.toThrow('gone');
    const closed = new FairQueue<number>();
    closed.push('a', 1);
    closed.close();
    closed.push('a', 2);
    const got: number[] = [];
    for await (const item of closed) got.push(item);
    expect(got).toEqual([]);
  });

  it('a loop waiting for an item wakes when one is pushed', async () => {
    const queue = new FairQueue<string>();
    const next = queue.next();
    queue.push('k', 'v');
    expect(await next).toEqual({ value: 'v', done: false });
  });
});
