import { describe, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import type { Client } from '../../src/client/index.js';
import { defineContract, execContract, inspectContract, type OutputOf } from '../../src/contracts/index.js';
import { defineOperation } from '../../src/dispatcher/index.js';

/**
 * An operation is a contract plus a handler; the client gets its types from the
 * contract without a cast. `npm run check:types` compiles this file: each
 * `@ts-expect-error` line must fail to compile, or the check fails.
 */
const greetContract = defineContract({
  name: 'hello/greet',
  kind: 'query',
  input: z.object({ name: z.string() }),
  output: z.object({ greeting: z.string() }),
});

describe('contracts carry their types to the server and the client', () => {
  it('the server implements a contract: the handler sees its input and must return its output', () => {
    const op = defineOperation({ ...greetContract, handler: ({ name }) => ({ greeting: `hello ${name}` }) });
    expectTypeOf(op.name).toEqualTypeOf<string>();
    // @ts-expect-error: the handler must return the contract's output
    defineOperation({ ...greetContract, handler: () => ({ greeting: 42 }) });
    // @ts-expect-error: the input has no field `nom`
    defineOperation({ ...greetContract, handler: ({ nom }: { nom: string }) => ({ greeting: nom }) });
  });

  it('the client calls a contract with its input type and gets its output type', () => {
    const typed = (client: Client) => {
      expectTypeOf(client.call(greetContract, { name: 'ada' })).toEqualTypeOf<Promise<{ greeting: string }>>();
      expectTypeOf(client.call(inspectContract, { containerId: 'web' })).toEqualTypeOf<Promise<Record<string, unknown>>>();
      expectTypeOf(client.iterate(execContract, { containerId: 'web', cmd: ['ls'] })).toEqualTypeOf<AsyncIterable<OutputOf<typeof execContract>>>();
      // @ts-expect-error: a wrong input does not compile
      void client.call(greetContract, { name: 1 });
      // @ts-expect-error: exec needs a command
      void client.subscribe(execContract, { containerId: 'web' });
      // @ts-expect-error: a subscription is not called as unary
      void client.call(execContract, { containerId: 'web', cmd: ['ls'] });
      // Names as strings stay possible for operations this client does not know.
      expectTypeOf(client.call<number>('some/other', { any: 'thing' })).toEqualTypeOf<Promise<number>>();
    };
    expectTypeOf(typed).toBeFunction();
  });
});
