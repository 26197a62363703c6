import { Observable } from 'rxjs';
import { z } from 'zod';
import type { Operation } from '../src/server/index.js';
import { server } from './built.js';

const { bytesSchema, defineOperation } = server;

/** Operations the benchmark drives; the same shapes its peers (gRPC, raw ws) serve. */
export function benchOperations(): Operation[] {
  return [
    defineOperation({
      name: 'bench/echo',
      kind: 'query',
      input: z.object({ text: z.string() }),
      output: z.object({ text: z.string() }),
      handler: (input) => input,
    }),
    defineOperation({
      name: 'bench/stream',
      kind: 'subscription',
      input: z.object({ items: z.number().int(), itemBytes: z.number().int() }),
      output: z.object({ data: bytesSchema }),
      handler: ({ items, itemBytes }, ctx) => {
        const data = new Uint8Array(itemBytes).fill(7);
        return (async function* () {
          for (let i = 0; i < items && !ctx.signal.aborted; i++) yield { data };
        })();
      },
    }),
    defineOperation({
      name: 'bench/idle',
      kind: 'subscription',
      input: z.null(),
      output: z.null(),
      handler: () => new Observable<null>(() => undefined),
    }),
    defineOperation({
      name: 'bench/hold',
      kind: 'subscription',
      input: z.object({ itemBytes: z.number().int() }),
      output: z.object({ data: bytesSchema }),
      // One item, then nothing until cancelled: a call with output its caller has not yet acknowledged.
      handler: ({ itemBytes }) =>
        new Observable<{ data: Uint8Array }>((subscriber) => {
          subscriber.next({ data: new Uint8Array(itemBytes).fill(7) });
        }),
    }),
    defineOperation({
      name: 'bench/memory',
      kind: 'query',
      input: z.null(),
      output: z.object({ heapUsed: z.number(), rss: z.number() }),
      handler: () => {
        (globalThis as { gc?: () => void }).gc?.();
        const m = process.memoryUsage();
        return { heapUsed: m.heapUsed, rss: m.rss };
      },
    }),
  ];
}
