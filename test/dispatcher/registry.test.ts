import type { Observable } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineOperation, Registry, type Operation } from '../../src/dispatcher/index.js';

const base = { input: z.null(), output: z.null() };

describe('defineOperation and Registry', () => {
  it('refuses two operations with one name', () => {
    const op = defineOperation({ name: 'a/b', kind: 'query', ...base, handler: () => null });
    expect(() => new Registry().register(op, op)).toThrowError('operation "a/b" is registered twice; operation names must be unique');
  });

  it('refuses an async function as a subscription handler', () => {
    expect(() =>
      defineOperation({ name: 'a/s', kind: 'subscription', ...base, handler: (async () => null) as unknown as () => Observable<null> }),
    ).toThrowError(/subscription handler returns an Observable or an async iterable, not a promise/);
  });

  it('refuses an async generator as a unary handler', () => {
    expect(() =>
      defineOperation({ name: 'a/q', kind: 'query', ...base, handler: async function* () { yield null; } as unknown as () => null }),
    ).toThrowError(/async generator is a subscription handler/);
  });

  it('refuses bad names, kinds, schemas and declared protocol codes', () => {
    expect(() => defineOperation({ name: 'bad name', kind: 'query', ...base, handler: () => null })).toThrowError(/name must be/);
    expect(() => new Registry().register({ name: 'a/k', kind: 'stream', ...base, handler: () => null } as unknown as Operation)).toThrowError(/kind must be/);
    expect(() => defineOperation({ name: 'a/i', kind: 'query', input: {} as z.ZodNull, output: z.null(), handler: () => null })).toThrowError(/input must be a zod schema/);
    expect(() =>
      defineOperation({ name: 'a/e', kind: 'query', ...base, errors: { TIMEOUT: { description: 'x' } }, handler: () => null }),
    ).toThrowError(/TIMEOUT is a protocol code/);
  });

  it('a subscription handler returning something else fails the call with INTERNAL at run time', async () => {
    const { MemoryConnection } = await import('../../src/testing/index.js');
    const op = defineOperation({ name: 'a/odd', kind: 'subscription', ...base, handler: () => 42 as unknown as Observable<null> });
    const conn = new MemoryConnection({ registry: new Registry().register(op) });
    conn.client.request('x', 'a/odd', null);
    const e = await conn.client.nextFor('x');
    expect(e.type === 'call.error' && e.payload).toMatchObject({ code: 'INTERNAL', message: expect.stringMatching(/not an Observable or async iterable/) });
  });
});
