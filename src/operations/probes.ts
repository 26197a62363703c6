import { Observable } from '../rx/index.js';
import { z } from 'zod';
import { bytesSchema, defineOperation, type Operation } from '../dispatcher/index.js';
import { nestedArrays, RpcError } from '../protocol/index.js';

/**
 * Probe operations: what the conformance runner (src/conformance) drives to observe
 * a server from outside. A server under test offers them under `conformance/`
 * (their names in spec/conformance); `callwire serve --conformance` turns them on.
 */
export function probeOperations(): Operation[] {
  // Groups are named by the scenario's unique ids; a server only runs probes under test.
  const flood = { produced: 0, groups: new Map<string, number>() };
  // Tags of handlers whose teardown has run: a second call can then observe it (ABT-1, DL-1).
  const tornDown = new Set<string>();
  const remember = (tag: string | undefined): void => {
    if (tag === undefined) return;
    if (tornDown.size >= 10_000) tornDown.clear(); // bounded: a test reads its tag right away
    tornDown.add(tag);
  };
  return [
    defineOperation({
      name: 'conformance/echo',
      kind: 'query',
      description: 'Returns its input.',
      input: z.object({ value: z.unknown() }).loose(),
      output: z.unknown(),
      handler: (input) => input,
    }),
    defineOperation({
      name: 'conformance/null',
      kind: 'query',
      description: 'Answers null: its call.responded must still carry the output key (RES-5).',
      input: z.null(),
      output: z.null(),
      handler: () => null,
    }),
    defineOperation({
      name: 'conformance/bytes',
      kind: 'query',
      description: 'Returns the bytes it was given, and their length.',
      input: z.object({ data: bytesSchema }),
      output: z.object({ data: bytesSchema, length: z.number().int() }),
      handler: ({ data }) => ({ data, length: data.byteLength }),
    }),
    defineOperation({
      name: 'conformance/restricted',
      kind: 'query',
      description: 'Needs the scope conformance:restricted.',
      input: z.null(),
      output: z.literal('allowed'),
      access: { requiredScopes: ['conformance:restricted'] },
      handler: () => 'allowed' as const,
    }),
    defineOperation({
      name: 'conformance/internal',
      kind: 'query',
      visibility: 'internal',
      description: 'Internal: must be indistinguishable from a missing operation.',
      input: z.null(),
      output: z.null(),
      handler: () => null,
    }),
    defineOperation({
      name: 'conformance/count',
      kind: 'subscription',
      description: 'Emits {n} for n = 0 … count-1, intervalMs apart, then completes.',
      input: z.object({ count: z.number().int().min(0), intervalMs: z.number().int().min(0).default(0) }),
      output: z.object({ n: z.number().int() }),
      handler: ({ count, intervalMs }, ctx) =>
        (async function* () {
          for (let n = 0; n < count && !ctx.signal.aborted; n++) {
            if (intervalMs > 0) await new Promise((resolve) => setTimeout(resolve, intervalMs));
            yield { n };
          }
        })(),
    }),
    defineOperation({
      name: 'conformance/fail',
      kind: 'query',
      description: 'Fails with the declared CONFORMANCE_FAILURE (typed details), an undeclared code, or a plain exception.',
      input: z.object({ mode: z.enum(['declared', 'undeclared', 'exception']) }),
      output: z.null(),
      errors: { CONFORMANCE_FAILURE: { description: 'The failure this operation declares.', details: z.object({ reason: z.string() }), httpStatus: 418 } },
      handler: ({ mode }) => {
        if (mode === 'declared') throw new RpcError('CONFORMANCE_FAILURE', 'failed as declared', { details: { reason: 'asked to' } });
        if (mode === 'undeclared') throw new RpcError('SURPRISE', 'an undeclared code');
        throw new Error('a plain exception');
      },
    }),
    defineOperation({
      name: 'conformance/fail-stream',
      kind: 'subscription',
      description: 'Emits `before` items, then fails with CONFORMANCE_FAILURE, then tries to emit more.',
      input: z.object({ before: z.number().int().min(0) }),
      output: z.object({ n: z.number().int() }),
      errors: { CONFORMANCE_FAILURE: { description: 'The failure this operation declares.' } },
      handler: ({ before }) =>
        new Observable<{ n: number }>((subscriber) => {
          for (let n = 0; n < before; n++) subscriber.next({ n });
          subscriber.error(new RpcError('CONFORMANCE_FAILURE', 'failed mid-stream'));
          subscriber.next({ n: before }); // must never reach the wire (ERR-2)
        }),
    }),
    defineOperation({
      name: 'conformance/bad-output',
      kind: 'query',
      description: 'Returns an output that fails its own output schema.',
      input: z.null(),
      output: z.object({ n: z.number() }),
      handler: () => ({ n: 'not a number' }) as unknown as { n: number },
    }),
    defineOperation({
      name: 'conformance/sleep',
      kind: 'query',
      description: 'Answers "slept" after ms milliseconds; stops at once when cancelled, and then conformance/torn-down reports its tag.',
      input: z.object({ ms: z.number().int().min(0), tag: z.string().max(200).optional() }),
      output: z.literal('slept'),
      handler: ({ ms, tag }, ctx) =>
        new Promise<'slept'>((resolve) => {
          const timer = setTimeout(() => resolve('slept'), ms);
          ctx.signal.addEventListener('abort', () => {
            clearTimeout(timer);
            remember(tag);
          });
        }),
    }),
    defineOperation({
      name: 'conformance/flood',
      kind: 'subscription',
      description: 'Emits items of itemBytes as fast as the transport takes them: pull-based (iterable) or push-based (observable).',
      input: z.object({
        items: z.number().int().min(1),
        itemBytes: z.number().int().min(1).max(1024 * 1024),
        mode: z.enum(['iterable', 'observable']),
        /** Floods of one group also add to its running total (conformance/flood-progress {group}): for many streams at once. */
        group: z.string().min(1).max(200).optional(),
      }),
      output: z.object({ seq: z.number().int(), data: bytesSchema }),
      handler: ({ items, itemBytes, mode, group }) => {
        flood.produced = 0;
        const count = (): void => {
          if (group !== undefined) flood.groups.set(group, (flood.groups.get(group) ?? 0) + 1);
        };
        const item = (seq: number) => ({ seq, data: new Uint8Array(itemBytes).fill(seq & 0xff) });
        if (mode === 'observable') {
          return new Observable<{ seq: number; data: Uint8Array }>((subscriber) => {
            for (let seq = 0; seq < items && !subscriber.closed; seq++) {
              flood.produced = seq + 1;
              count();
              subscriber.next(item(seq));
            }
            subscriber.complete();
          });
        }
        return (async function* () {
          for (let seq = 0; seq < items; seq++) {
            flood.produced = seq + 1;
            count();
            yield item(seq);
          }
        })();
      },
    }),
    defineOperation({
      name: 'conformance/flood-progress',
      kind: 'query',
      description: 'How many items the last conformance/flood has produced so far, or with {group} all floods of that group together.',
      input: z.union([z.null(), z.object({ group: z.string().min(1).max(200) })]),
      output: z.object({ produced: z.number().int() }),
      handler: (input) => ({ produced: input === null ? flood.produced : (flood.groups.get(input.group) ?? 0) }),
    }),
    defineOperation({
      name: 'conformance/hold',
      kind: 'subscription',
      description: 'Emits {tag} once, then holds the call open until it is cancelled; its teardown records the tag for conformance/torn-down.',
      input: z.object({ tag: z.string().min(1).max(200) }),
      output: z.object({ tag: z.string() }),
      handler: ({ tag }) =>
        new Observable<{ tag: string }>((subscriber) => {
          subscriber.next({ tag });
          return () => remember(tag);
        }),
    }),
    defineOperation({
      name: 'conformance/torn-down',
      kind: 'query',
      description: 'Whether the handler of conformance/hold or conformance/sleep with this tag has been torn down.',
      input: z.object({ tag: z.string().min(1).max(200) }),
      output: z.object({ tornDown: z.boolean() }),
      handler: ({ tag }) => ({ tornDown: tornDown.has(tag) }),
    }),
    defineOperation({
      name: 'conformance/blob',
      kind: 'query',
      description: 'Returns {data} of the given number of zero bytes: an output as large as asked, for the outbound frame limit.',
      input: z.object({ bytes: z.number().int().min(0).max(64 * 1024 * 1024) }),
      output: z.object({ data: bytesSchema }),
      handler: ({ bytes }) => ({ data: new Uint8Array(bytes) }),
    }),
    defineOperation({
      name: 'conformance/nested',
      kind: 'query',
      description: 'Returns `levels` arrays, each the only element of the one around it: an output as deep as asked, for the depth limit (LIM-2).',
      input: z.object({ levels: z.number().int().min(1).max(1000) }),
      output: z.unknown(),
      handler: ({ levels }) => nestedArrays(levels),
    }),
    defineOperation({
      name: 'conformance/collect',
      kind: 'subscription',
      description: 'Takes an input stream of {n}: emits {n: 2n} for each item as it is pulled, then completes at the end of input. With pull: false it never pulls.',
      input: z.object({ pull: z.boolean().default(true) }),
      inputStream: z.object({ n: z.number().int(), pad: z.string().optional() }),
      output: z.object({ n: z.number().int() }),
      handler: ({ pull }, ctx) =>
        (async function* () {
          if (!pull) return void (await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve)));
          for await (const item of ctx.input as AsyncIterable<{ n: number }>) yield { n: item.n * 2 };
        })(),
    }),
  ];
}
