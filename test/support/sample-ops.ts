import { createHash } from 'node:crypto';
import { Observable, interval, map, take } from 'rxjs';
import type { Client } from '../../src/client/index.js';
import { z } from 'zod';
import { bytesSchema, defineOperation, Registry, type Operation } from '../../src/dispatcher/index.js';
import { discoveryOperations } from '../../src/operations/index.js';
import { RpcError } from '../../src/protocol/index.js';

/** Counters the tests read to prove handlers ran, or did not, and were torn down. */
export class Probe {
  started = 0;
  teardowns = 0;
  aborts = 0;
  /** Items `test/bytes` has produced: how far a pulled source was pulled. */
  produced = 0;
  signals: AbortSignal[] = [];
}

export function sampleRegistry(probe = new Probe()): { registry: Registry; probe: Probe } {
  const registry = new Registry().register(...sampleOperations(probe));
  registry.register(...discoveryOperations(registry));
  return { registry, probe };
}

/** Deterministic bytes: chunk i of a stream, so both ends can hash the same data. */
export function patternChunk(index: number, size: number): Uint8Array {
  const chunk = new Uint8Array(size);
  let x = (index * 2654435761) >>> 0;
  for (let i = 0; i < size; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    chunk[i] = x >>> 24;
  }
  return chunk;
}

/** SHA-256 (hex) of everything `test/bytes` sends for these sizes. */
export function patternDigest(totalBytes: number, chunkBytes: number): string {
  const hash = createHash('sha256');
  for (let i = 0; i * chunkBytes < totalBytes; i++) hash.update(patternChunk(i, Math.min(chunkBytes, totalBytes - i * chunkBytes)));
  return hash.digest('hex');
}

/** Reads a whole `test/bytes` stream through `client`: how many bytes came, and their SHA-256 (hex). */
export async function receivePattern(client: Client, totalBytes: number, chunkBytes: number): Promise<{ bytes: number; digest: string }> {
  const hash = createHash('sha256');
  let bytes = 0;
  for await (const item of client.iterate<{ data: Uint8Array }>('test/bytes', { totalBytes, chunkBytes })) {
    hash.update(item.data);
    bytes += item.data.byteLength;
  }
  return { bytes, digest: hash.digest('hex') };
}

export function sampleOperations(probe: Probe): Operation[] {
  return [
    defineOperation({
      name: 'test/bytes',
      kind: 'subscription',
      input: z.object({ totalBytes: z.number().int().min(0), chunkBytes: z.number().int().min(1).max(1024 * 1024) }),
      output: z.object({ data: bytesSchema }),
      handler: ({ totalBytes, chunkBytes }, ctx) => {
        probe.started++;
        return (async function* () {
          try {
            for (let sent = 0, i = 0; sent < totalBytes && !ctx.signal.aborted; i++) {
              const size = Math.min(chunkBytes, totalBytes - sent);
              sent += size;
              probe.produced++;
              yield { data: patternChunk(i, size) };
            }
          } finally {
            probe.teardowns++;
          }
        })();
      },
    }),
    defineOperation({
      name: 'test/upload',
      kind: 'mutation',
      input: z.object({ data: bytesSchema }),
      output: z.object({ bytes: z.number() }),
      handler: ({ data }) => ({ bytes: data.byteLength }),
    }),
    defineOperation({
      name: 'test/echo',
      kind: 'query',
      input: z.object({ text: z.string(), count: z.number().int().min(0).optional() }),
      output: z.object({ text: z.string() }),
      handler: ({ text }) => {
        probe.started++;
        return { text };
      },
    }),
    defineOperation({
      name: 'test/secret',
      kind: 'mutation',
      input: z.null(),
      output: z.string(),
      access: { requiredScopes: ['secret:read', 'secret:write'] },
      handler: () => {
        probe.started++;
        return 'classified';
      },
    }),
    defineOperation({
      name: 'test/any-scope',
      kind: 'query',
      input: z.null(),
      output: z.string(),
      access: { requiredScopesAny: ['a', 'b'] },
      handler: () => {
        probe.started++;
        return 'ok';
      },
    }),
    defineOperation({
      name: 'test/internal',
      kind: 'query',
      visibility: 'internal',
      input: z.null(),
      output: z.null(),
      handler: () => {
        probe.started++;
        return null;
      },
    }),
    defineOperation({
      name: 'test/fail',
      kind: 'query',
      input: z.object({ mode: z.enum(['declared', 'bad-details', 'undeclared', 'plain', 'string', 'forbidden']) }),
      output: z.null(),
      errors: { WIDGET_MISSING: { description: 'no such widget', details: z.object({ widget: z.string() }), httpStatus: 404 } },
      handler: ({ mode }) => {
        switch (mode) {
          case 'declared':
            throw new RpcError('WIDGET_MISSING', 'widget w1 is missing', { details: { widget: 'w1' } });
          case 'bad-details':
            throw new RpcError('WIDGET_MISSING', 'widget is missing', { details: { widget: 7 } });
          case 'undeclared':
            throw new RpcError('GADGET_BROKEN', 'gadget broke');
          case 'plain':
            throw new Error('kaboom');
          case 'string':
            return Promise.reject(new Error('rejected'));
          case 'forbidden':
            throw RpcError.of('FORBIDDEN', 'you do not own this');
        }
      },
    }),
    defineOperation({
      name: 'test/bad-output',
      kind: 'query',
      input: z.null(),
      output: z.object({ n: z.number() }),
      handler: () => ({ n: 'not a number' }) as unknown as { n: number },
    }),
    defineOperation({
      name: 'test/ticker',
      kind: 'subscription',
      input: z.object({ count: z.number().int().min(0), intervalMs: z.number().int().min(1).default(5) }),
      output: z.object({ n: z.number() }),
      handler: ({ count, intervalMs }, ctx) => {
        probe.started++;
        probe.signals.push(ctx.signal);
        ctx.signal.addEventListener('abort', () => probe.aborts++);
        return new Observable<{ n: number }>((subscriber) => {
          const sub = interval(intervalMs)
            .pipe(
              take(count),
              map((n) => ({ n })),
            )
            .subscribe(subscriber);
          return () => {
            probe.teardowns++;
            sub.unsubscribe();
          };
        });
      },
    }),
    defineOperation({
      name: 'test/forever',
      kind: 'subscription',
      input: z.null(),
      output: z.object({ n: z.number() }),
      handler: (_input, ctx) => {
        probe.started++;
        probe.signals.push(ctx.signal);
        return (async function* () {
          try {
            for (let n = 0; ; n++) {
              yield { n };
              await new Promise((r) => setTimeout(r, 5));
            }
          } finally {
            probe.teardowns++;
          }
        })();
      },
    }),
    defineOperation({
      name: 'test/fail-midstream',
      kind: 'subscription',
      input: z.null(),
      output: z.object({ n: z.number() }),
      handler: () => {
        probe.started++;
        // A faulty source that ignores the Observable contract: emits after erroring.
        const faulty = {
          lift: () => faulty,
          subscribe(observer: { next: (v: unknown) => void; error: (e: unknown) => void; complete: () => void }) {
            observer.next({ n: 1 });
            observer.next({ n: 2 });
            observer.error(new RpcError('STREAM_BROKE', 'broke mid-stream'));
            observer.next({ n: 3 });
            observer.complete();
            return { unsubscribe: () => probe.teardowns++ };
          },
        };
        return faulty as unknown as Observable<{ n: number }>;
      },
      errors: { STREAM_BROKE: { description: 'the stream broke' } },
    }),
    defineOperation({
      name: 'test/sleep',
      kind: 'query',
      input: z.object({ ms: z.number().int() }),
      output: z.string(),
      handler: ({ ms }, ctx) =>
        new Promise<string>((resolve) => {
          probe.started++;
          const timer = setTimeout(() => resolve('slept'), ms);
          ctx.signal.addEventListener('abort', () => {
            probe.aborts++;
            clearTimeout(timer);
          });
        }),
    }),
      defineOperation({
      name: 'test/slow-mutation',
      kind: 'mutation',
      description: 'Like test/sleep, but a mutation: not idempotent, so never retried after TIMEOUT.',
      input: z.object({ ms: z.number().int() }),
      output: z.string(),
      handler: ({ ms }, ctx) =>
        new Promise<string>((resolve) => {
          probe.started++;
          const timer = setTimeout(() => resolve('done'), ms);
          ctx.signal.addEventListener('abort', () => clearTimeout(timer));
        }),
    }),
      defineOperation({
      name: 'test/input-of',
      kind: 'query',
      description: 'Says what input the handler received.',
      input: z.unknown(),
      output: z.object({ inputWas: z.string() }),
      handler: (input) => ({ inputWas: input === null ? 'null' : typeof input }),
    }),
  ];
}
