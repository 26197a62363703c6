import { describe, expect, it } from 'vitest';
import { Teardown } from '../../src/server/teardown.js';

describe('Teardown: one path that undoes what started, newest first', () => {
  it('runs the undos newest first, each awaited before the next', async () => {
    const teardown = new Teardown();
    const done: string[] = [];
    teardown.defer(() => void done.push('audit'));
    teardown.use({ close: async () => void (await Promise.resolve(), done.push('listener')) });
    teardown.defer(() => void done.push('drain'));
    await teardown.dispose();
    expect(done).toEqual(['drain', 'listener', 'audit']);
  });

  it('an undo that fails keeps none of the others from running, and its error is reported after all ran', async () => {
    const teardown = new Teardown();
    const done: string[] = [];
    teardown.defer(() => void done.push('first'));
    teardown.defer(() => {
      throw new Error('gateway would not leave');
    });
    teardown.defer(() => void done.push('last'));
    await expect(teardown.dispose()).rejects.toThrow('gateway would not leave');
    expect(done).toEqual(['last', 'first']);
  });

  it('runs once: a second dispose gets the first one\'s promise, and nothing may be registered after', async () => {
    const teardown = new Teardown();
    let runs = 0;
    teardown.defer(() => void runs++);
    await Promise.all([teardown.dispose(), teardown.dispose()]);
    await teardown.dispose();
    expect(runs).toBe(1);
    expect(() => teardown.defer(() => undefined)).toThrow(/closed/);
  });

  it('attempt: a start that throws undoes what it had started and throws its own error, not an undo\'s', async () => {
    const teardown = new Teardown();
    const done: string[] = [];
    const start = teardown.attempt(async () => {
      teardown.defer(() => void done.push('http'));
      teardown.defer(() => {
        throw new Error('close failed too');
      });
      throw new Error('EADDRINUSE');
    });
    await expect(start).rejects.toThrow('EADDRINUSE');
    expect(done).toEqual(['http']);
  });

  it('attempt: a start that succeeds undoes nothing until dispose', async () => {
    const teardown = new Teardown();
    let undone = false;
    expect(await teardown.attempt(async () => (teardown.defer(() => void (undone = true)), 'running'))).toBe('running');
    expect(undone).toBe(false);
    await teardown.dispose();
    expect(undone).toBe(true);
  });
});
