import { afterEach, describe, expect, it } from 'vitest';
import type { RpcError } from '../../src/client/index.js';
import { HostTable, type HostTableOptions } from '../../src/fleet/host-table.js';
import { NamePins, parsePin } from '../../src/fleet/name-pins.js';

describe('the gateway\'s host table: where a container reference leads', () => {
  const gone: string[] = [];
  const asked: string[] = [];
  let table: HostTable;
  const ignored: string[] = [];
  const make = (options: HostTableOptions = {}): HostTable =>
    (table = new HostTable({ gone: (host) => gone.push(host), ask: (host) => asked.push(host), ignored: (host, name, to) => ignored.push(`${host} ${name} ${to}`) }, options));
  const sweep = (t: HostTable): void => (t as unknown as { sweep(): void }).sweep();
  afterEach(() => table?.close());

  const beat = (version: number, containers?: { id: string; names: string[] }[]) => ({ startedAt: 1, version, engine: 'up' as const, ...(containers ? { containers } : {}) });

  it('routes an id, an id prefix or a name one host holds; HOST/NAME to its host as it is', () => {
    const t = make();
    t.heard('a', beat(1, [{ id: 'aaaa1111', names: ['web'] }]));
    t.heard('b', beat(1, [{ id: 'bbbb2222', names: ['db'] }]));
    expect(t.route('web')).toEqual({ host: 'a', ref: 'web' });
    expect(t.route('bbbb')).toEqual({ host: 'b', ref: 'bbbb' });
    expect(t.route('b/anything')).toEqual({ host: 'b', ref: 'anything' });
    expect((t.route('nope') as RpcError).code).toBe('CONTAINER_NOT_FOUND');
    expect((t.route('zz/web') as RpcError).code).toBe('NOT_FOUND');
  });

  it('a name on two hosts is ambiguous and names both; on one host an exact name wins over another container\'s id prefix', () => {
    const t = make();
    t.heard('a', beat(1, [{ id: 'cafe0001', names: ['web'] }]));
    t.heard('b', beat(1, [{ id: 'cafe0002', names: ['web'] }, { id: 'beef0003', names: ['cafe'] }]));
    const ambiguous = t.route('web') as RpcError;
    expect(ambiguous.code).toBe('INVALID_INPUT');
    expect(ambiguous.details).toEqual({ candidates: ['a/web', 'b/web'], matches: 2 });
    expect(t.route('cafe', (host) => host === 'b')).toEqual({ host: 'b', ref: 'cafe' });
    expect(t.route('web', (host) => host === 'b')).toEqual({ host: 'b', ref: 'web' });
  });

  it('another host cannot take the calls meant for a container by naming one of its own after that id prefix', () => {
    const t = make();
    t.heard('a', beat(1, [{ id: '3f2a9c81d7e4aaaa', names: ['build'] }]));
    // A hostile agent b advertises a container named as a's short id, the reference a caller copies from `docker ps`.
    t.heard('b', beat(1, [{ id: 'beef0003', names: ['3f2a9c81d7e4'] }]));
    const captured = t.route('3f2a9c81d7e4') as RpcError;
    expect(captured.code).toBe('INVALID_INPUT');
    expect(captured.details).toEqual({ candidates: ['a/build', 'b/3f2a9c81d7e4'], matches: 2 });
    expect(t.route('a/3f2a9c81d7e4')).toEqual({ host: 'a', ref: '3f2a9c81d7e4' });
  });

  it('HOST/NAME on a host the caller may not reach is FORBIDDEN alike whether it is up, down or unknown, and NOT_FOUND names only reachable hosts', () => {
    const t = make();
    const now = Date.now();
    t.heard('a', beat(1, [{ id: 'aaaa1111', names: ['web'] }]), now);
    t.heard('secret', beat(1, [{ id: 'bbbb2222', names: ['db'] }]), now);
    t.heard('gone', beat(1, []), now - 60_000);
    (t as unknown as { sweep(): void }).sweep();
    const onlyA = (host: string): boolean => host === 'a';
    for (const ref of ['secret/db', 'gone/x', 'never/x']) {
      const refused = t.route(ref, onlyA) as RpcError;
      expect(refused.code, ref).toBe('FORBIDDEN');
      expect(refused.message, ref).toBe(`missing scope: host:${ref.split('/')[0]}`);
    }
    const unknown = t.route('never/x', () => true) as RpcError;
    expect(unknown.code).toBe('NOT_FOUND');
    expect(unknown.message).toMatch(/secret/);
    expect(t.unreachable('never', onlyA)?.message).toBe('missing scope: host:never');
    expect(t.unreachable('nope', (host) => host !== 'secret')?.message).toBe('no host nope in the fleet (hosts: a)');
  });

  it('a short prefix thousands of containers share is refused with a bounded answer that says how many match', () => {
    const t = make();
    const many = (host: string) => Array.from({ length: 5000 }, (_, i) => ({ id: `a${host}${i.toString(16).padStart(6, '0')}`, names: [`${host}-worker-${i}`] }));
    t.heard('h1', beat(1, many('1')));
    t.heard('h2', beat(1, many('2')));
    const refused = t.route('a') as RpcError;
    expect(refused.code).toBe('INVALID_INPUT');
    const details = refused.details as { candidates: string[]; matches: number };
    expect(details.matches).toBe(10_000);
    expect(details.candidates.length).toBeLessThanOrEqual(20);
    expect(refused.message).toContain('(and 9980 more)');
    expect(refused.message.length).toBeLessThan(2000);
  });

  it('a container the gateway created and the host\'s table both name is one container, not an ambiguity', () => {
    const t = make();
    t.heard('a', beat(1, []));
    t.learn('a', { id: 'dead0001', names: [] });
    t.heard('a', beat(2, [{ id: 'dead0001', names: ['happy_name'] }]));
    t.learn('a', { id: 'dead0001', names: [] });
    expect(t.route('dead0001')).toEqual({ host: 'a', ref: 'dead0001' });
  });

  it('a heartbeat whose version is ahead of the table asks for the table; a restarted agent is gone at once', () => {
    const t = make();
    t.heard('a', beat(1, []));
    t.heard('a', beat(2), Date.now() + 5000);
    expect(asked).toContain('a');
    t.heard('a', { ...beat(3, []), startedAt: 2 });
    expect(gone).toContain('a');
  });

  it('a restarted host keeps its names until its new agent sends a table: one withheld (engine down, too large) neither frees them nor is asked for', () => {
    const t = make();
    const now = Date.now();
    t.heard('a', beat(7, [{ id: 'aaaa1111', names: ['demo'] }]), now);
    t.heard('b', beat(1, [{ id: 'bbbb2222', names: ['demo'] }]), now);
    const askedBefore = asked.length;
    // A new agent whose engine does not answer: its calls are gone, its names are not.
    t.heard('a', { startedAt: 2, version: 0, engine: 'down', withheld: 'engine-down' }, now + 1);
    expect(gone).toContain('a');
    expect((t.route('demo') as RpcError).details).toEqual({ candidates: ['a/demo', 'b/demo'], matches: 2 });
    expect(t.runningRows('a')).toBeUndefined();
    t.heard('a', { startedAt: 2, version: 0, engine: 'down' }, now + 5000);
    t.heard('a', { startedAt: 2, version: 1, engine: 'up', withheld: 'too-large' }, now + 10_000);
    t.heard('a', { startedAt: 2, version: 1, engine: 'up' }, now + 15_000);
    expect((t.route('demo') as RpcError).code).toBe('INVALID_INPUT');
    expect(asked.slice(askedBefore)).toEqual([]);
    // A version ahead of what it withheld is asked for; its table, once it comes, replaces the old one.
    t.heard('a', { startedAt: 2, version: 2, engine: 'up' }, now + 20_000);
    expect(asked.slice(askedBefore)).toEqual(['a']);
    t.heard('a', { startedAt: 2, version: 2, engine: 'up', containers: [] }, now + 21_000);
    expect(t.route('demo')).toEqual({ host: 'b', ref: 'demo' });
  });

  it('a table older than the one held (delivered late) is not applied: the newer table routes', () => {
    const t = make();
    const askedBefore = asked.length;
    t.heard('a', beat(5, [{ id: 'aaaa0005', names: ['new'] }]));
    t.heard('a', beat(4, [{ id: 'aaaa0004', names: ['old'] }]));
    expect(t.route('new')).toEqual({ host: 'a', ref: 'new' });
    expect((t.route('old') as RpcError).code).toBe('CONTAINER_NOT_FOUND');
    expect(asked.slice(askedBefore)).toEqual([]);
  });

  it('a down host keeps its names: another host announcing them makes them ambiguous, never its own; the down host\'s alone is UNAVAILABLE naming it', () => {
    const t = make();
    const now = Date.now();
    t.heard('a', beat(1, [{ id: 'aaaa1111', names: ['demo'] }]), now - 10_000);
    sweep(t);
    expect(t.isUp('a')).toBe(false);
    const alone = t.route('demo') as RpcError;
    expect(alone.code).toBe('UNAVAILABLE');
    expect(alone.message).toMatch(/^host a is down: no heartbeat for \d+ s, and it holds demo/);
    // Host b (hostile, or only unlucky) announces the same name while a is down: no call goes to b.
    t.heard('b', beat(1, [{ id: 'bbbb2222', names: ['demo'] }]));
    const contested = t.route('demo') as RpcError;
    expect(contested.code).toBe('INVALID_INPUT');
    expect(contested.details).toEqual({ candidates: ['a/demo', 'b/demo'], matches: 2 });
    expect(t.route('b/demo')).toEqual({ host: 'b', ref: 'demo' });
    // A caller who may reach b only was never a's: for it the name is b's.
    expect(t.route('demo', (host) => host === 'b')).toEqual({ host: 'b', ref: 'demo' });
  });

  it('a down host is forgotten after --fleet-forget-after, and its names with it', () => {
    const t = make({ forgetAfterMs: 60_000 });
    t.heard('a', beat(1, [{ id: 'aaaa1111', names: ['demo'] }]), Date.now() - 30_000);
    t.heard('b', beat(1, [{ id: 'bbbb2222', names: ['demo'] }]));
    sweep(t);
    expect((t.route('demo') as RpcError).code).toBe('INVALID_INPUT');
    t.heard('a', beat(1, [{ id: 'aaaa1111', names: ['demo'] }]), Date.now() - 90_000);
    sweep(t); // down
    sweep(t); // and down for longer than 60 s: forgotten
    expect(t.states().map((h) => h.id)).toEqual(['b']);
    expect(t.route('demo')).toEqual({ host: 'b', ref: 'demo' });
  });

  it('a pinned name resolves to its host only: another host announcing it is ignored (and told once), and it stays unambiguous', () => {
    ignored.length = 0;
    const t = make({ pins: new NamePins([parsePin('demo=a'), parsePin('db-*=a')]) });
    t.heard('a', beat(1, [{ id: 'aaaa1111', names: ['demo'] }]));
    t.heard('b', beat(1, [{ id: 'bbbb2222', names: ['demo', 'other'] }, { id: 'demo99', names: ['db-main'] }]));
    t.heard('b', beat(2, [{ id: 'bbbb2222', names: ['demo', 'other'] }, { id: 'demo99', names: ['db-main'] }]));
    expect(ignored).toEqual(['b demo a', 'b db-main a']);
    expect(t.route('demo')).toEqual({ host: 'a', ref: 'demo' });
    // Not on a's table yet: still a's (its agent answers whether it exists).
    expect(t.route('db-main')).toEqual({ host: 'a', ref: 'db-main' });
    expect(t.route('other')).toEqual({ host: 'b', ref: 'other' });
    // a down: the pinned name is UNAVAILABLE naming a, never b's.
    t.heard('a', beat(1, [{ id: 'aaaa1111', names: ['demo'] }]), Date.now() - 10_000);
    sweep(t);
    const down = t.route('demo') as RpcError;
    expect(down.code).toBe('UNAVAILABLE');
    expect(down.message).toMatch(/^host a is down/);
    // A caller who may not reach a does not get b's instead.
    expect((t.route('demo', (host) => host === 'b') as RpcError).code).toBe('CONTAINER_NOT_FOUND');
  });

  it('--pin takes NAME=HOST and PREFIX*=HOST; a name pinned to two hosts, or a bad one, is refused at start', () => {
    expect(parsePin('web=a')).toEqual({ pattern: 'web', host: 'a' });
    expect(parsePin('db-*=host-2')).toEqual({ pattern: 'db-*', host: 'host-2' });
    for (const bad of ['web', '=a', 'web=', 'web=A', '/web=a', 'w*b=a']) expect(() => parsePin(bad), bad).toThrow(/--pin/);
    expect(() => new NamePins([parsePin('web=a'), parsePin('web=b')])).toThrow(/already pinned to host a/);
    const pins = new NamePins([parsePin('db-*=a'), parsePin('db-b*=b'), parsePin('db-bx=c')]);
    expect(['db-1', 'db-b1', 'db-bx', 'web'].map((n) => pins.hostOf(n))).toEqual(['a', 'b', 'c', undefined]);
  });
});
