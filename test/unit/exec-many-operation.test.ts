import { describe, expect, it } from 'vitest';
import { containerListContract, execContract, MAX_FAN_OUT_TARGETS } from '../../src/contracts/index.js';
import { createDispatcher, defineOperation, Registry, type Identity, type DispatcherLimits } from '../../src/dispatcher/index.js';
import { execManyOperation } from '../../src/fan-out/index.js';
import { serviceOperations } from '../../src/operations/index.js';
import { RpcError } from '../../src/protocol/index.js';
import { InProcessClient } from '../../src/testing/index.js';
import { sleep, until } from '../support/wait.js';

/**
 * `docker/container/exec-many` over a dispatcher whose list and exec are fakes: what the
 * fan-out does to the calls it makes (as whom, how many at once, how much ahead of its
 * reader), with no engine. docs/security.md "Fan-out" is the threat model tested.
 */
interface Engine {
  /** Subjects of every list and exec call the fakes served. */
  readonly callers: (string | null)[];
  execs: number;
  live: number;
  mostLive: number;
  produced: number;
  cancelled: number;
}

const OPS: Identity = { subject: 'ops', scopes: ['container:*'] };
const LINE = 'x'.repeat(1000);

function fakeEngine(containers: number, options: { endless?: boolean; limits?: Partial<DispatcherLimits>; hold?: { container: string; until: Promise<void> } } = {}) {
  const engine: Engine = { callers: [], execs: 0, live: 0, mostLive: 0, produced: 0, cancelled: 0 };
  const rows = Array.from({ length: containers }, (_, i) => ({
    id: `id${i}`,
    names: [`/fw-${i}`],
    image: 'callwire-test:busybox',
    state: 'running',
    status: 'Up',
    labels: i % 2 === 0 ? { fanweb: '1', even: 'yes' } : { fanweb: '1' },
    created: 0,
  }));
  const registry = new Registry().register(
    defineOperation({
      ...containerListContract,
      handler: (_input, ctx) => {
        engine.callers.push(ctx.identity?.subject ?? null);
        return { containers: rows };
      },
    }),
    defineOperation({
      ...execContract,
      handler: (input, ctx) =>
        (async function* () {
          engine.callers.push(ctx.identity?.subject ?? null);
          engine.execs++;
          engine.live++;
          engine.mostLive = Math.max(engine.mostLive, engine.live);
          let ended = false;
          try {
            if (options.endless) {
              for (;;) {
                engine.produced++;
                yield { stream: 'stdout' as const, text: LINE };
              }
            }
            await sleep(1);
            yield { stream: 'stdout' as const, text: `${input.containerId}\n` };
            if (options.hold?.container === input.containerId) await options.hold.until;
            const n = Number(input.containerId.slice(3));
            ended = true;
            yield { exitCode: n % 5 === 3 ? 3 : 0, terminal: true as const, stdoutBytes: input.containerId.length + 1, stderrBytes: 0 };
          } finally {
            engine.live--;
            if (!ended) engine.cancelled++;
          }
        })(),
    }),
  );
  const dispatcher = createDispatcher({ registry, ...(options.limits ? { limits: options.limits } : {}) });
  // services/info among them: a selection asks it whose containers are the caller's own.
  registry.register(execManyOperation(dispatcher), ...serviceOperations({ callTables: () => dispatcher.connections, execKillFailures: () => 0, limits: { ...dispatcher.limits, maxCallIdBytes: 128, keepaliveMs: 0, maxConnections: 0, handshakeTimeoutMs: 0 } }));
  return { engine, dispatcher };
}

async function all(stream: AsyncIterable<unknown>): Promise<Record<string, unknown>[]> {
  const items: Record<string, unknown>[] = [];
  for await (const item of stream) items.push(item as Record<string, unknown>);
  return items;
}

describe('docker/container/exec-many, the operation', () => {
  it('runs every selected target as the caller: the selection first, frames tagged, each result, then the summary', async () => {
    const { engine, dispatcher } = fakeEngine(10);
    const client = new InProcessClient(dispatcher, OPS);
    const items = await all(client.stream('docker/container/exec-many', { labels: ['even=yes'], cmd: ['hostname'] }));
    const targets = ['fw-0', 'fw-2', 'fw-4', 'fw-6', 'fw-8'];
    // The fake's containers carry no callwire labels: the operator's, owner null, all taken.
    expect(items[0]).toEqual({ targets, owners: Object.fromEntries(targets.map((t) => [t, null])), othersLeftOut: 0 });
    const frames = items.filter((item) => 'frame' in item);
    expect(frames.map((f) => f['target']).sort()).toEqual(targets);
    for (const f of frames) expect(f['frame']).toEqual({ stream: 'stdout', text: `${String(f['target'])}\n` });
    expect(items.filter((item) => 'result' in item).map((r) => r['target'])).toHaveLength(5);
    const last = items[items.length - 1] as { summary: { targets: number; exitCode: number; text: string; results: unknown[] }; terminal: boolean };
    expect(last.terminal).toBe(true);
    expect(last.summary).toMatchObject({ targets: 5, exitCode: 3, text: '5 targets: 4 exit 0, 1 exit 3 (fw-8)' });
    // The list and every exec were calls of the caller's, not of the server's.
    expect(engine.callers).toEqual(Array(6).fill('ops'));
  });

  it("streams each target's result as it ends, while others still run", async () => {
    let release: () => void = () => undefined;
    const { engine, dispatcher } = fakeEngine(2, { hold: { container: 'fw-1', until: new Promise<void>((resolve) => (release = resolve)) } });
    const client = new InProcessClient(dispatcher, OPS);
    const seen: Record<string, unknown>[] = [];
    for await (const item of client.stream('docker/container/exec-many', { targets: ['fw-*'], cmd: ['true'] })) {
      seen.push(item as Record<string, unknown>);
      if ((item as { target?: string; result?: unknown }).target === 'fw-0' && 'result' in (item as object)) {
        // fw-0 has ended and said so; fw-1 is still running.
        expect(engine.live).toBe(1);
        release();
      }
    }
    expect(seen.filter((item) => 'result' in item).map((item) => item['target'])).toEqual(['fw-0', 'fw-1']);
  });

  it('a caller who may not list is refused the selection, as by hand: no target runs', async () => {
    const { engine, dispatcher } = fakeEngine(4);
    const client = new InProcessClient(dispatcher, { subject: 'runner', scopes: ['container:exec'] });
    const error = await all(client.stream('docker/container/exec-many', { targets: ['fw-*'], cmd: ['true'] })).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RpcError);
    expect((error as RpcError).code).toBe('FORBIDDEN');
    expect((error as RpcError).message).toMatch(/container:list/);
    expect(engine.execs).toBe(0);
  });

  it("never runs more execs at once than the caller's exec cap leaves (the fan-out itself holds one)", async () => {
    const { engine, dispatcher } = fakeEngine(20, { limits: { maxExecSessionsPerIdentity: 3 } });
    const client = new InProcessClient(dispatcher, OPS);
    const items = await all(client.stream('docker/container/exec-many', { labels: ['fanweb'], cmd: ['true'], parallel: 64 }));
    expect(engine.mostLive).toBeLessThanOrEqual(2);
    const last = items[items.length - 1] as { summary: { targets: number; results: { exitCode?: number }[] } };
    expect(last.summary.targets).toBe(20);
    expect(last.summary.results.every((r) => r.exitCode !== undefined)).toBe(true);
  });

  it(`refuses a selection of more than ${MAX_FAN_OUT_TARGETS} targets before any runs`, async () => {
    const { engine, dispatcher } = fakeEngine(MAX_FAN_OUT_TARGETS + 1);
    const client = new InProcessClient(dispatcher, OPS);
    const error = await all(client.stream('docker/container/exec-many', { labels: ['fanweb'], cmd: ['true'] })).catch((e: unknown) => e);
    expect((error as RpcError).code).toBe('INVALID_INPUT');
    expect((error as RpcError).message).toMatch(/10001 targets/);
    expect(engine.execs).toBe(0);
  });

  it('a reader that stops reading holds the targets (credit), and cancelling ends every one', async () => {
    const parallel = 4;
    const { engine, dispatcher } = fakeEngine(8, { endless: true });
    const client = new InProcessClient(dispatcher, OPS);
    const stream = client.stream('docker/container/exec-many', { labels: ['fanweb'], cmd: ['yes'], parallel });
    const reader = stream[Symbol.asyncIterator]();
    await reader.next(); // the selection
    await reader.next(); // one frame; then nothing more is read
    await until(() => engine.live === parallel, 'the first targets to start');
    // Each running target's own output credit (1 MiB of 1 kB lines, and the server's buffer of as much) and a few frames between: nothing unbounded.
    const bound = parallel * 2 * 1100 + 1000;
    // Production stops: wait until it has stood still for a while, or passed the bound.
    let seen = -1;
    while (engine.produced !== seen && engine.produced < bound) {
      seen = engine.produced;
      await sleep(300);
    }
    expect(engine.produced).toBeLessThan(bound);
    stream.abort();
    await until(() => engine.live === 0, 'every target to end');
    expect(engine.cancelled).toBe(parallel);
    expect(engine.execs).toBe(parallel);
  });
});
