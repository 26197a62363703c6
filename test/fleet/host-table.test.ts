import { afterEach, describe, expect, it } from 'vitest';
import type { RpcError } from '../../src/client/index.js';
import { HostTable } from '../../src/fleet/host-table.js';

describe('the gateway\'s host table: where a container reference leads', () => {
  const gone: string[] = [];
  const asked: string[] = [];
  let table: HostTable;
  const make = (): HostTable => (table = new HostTable({ gone: (host) => gone.push(host), ask: (host) => asked.push(host) }));
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

  it('a name on two hosts is ambiguous and names both; an exact name wins over another container\'s id prefix', () => {
    const t = make();
    t.heard('a', beat(1, [{ id: 'cafe0001', names: ['web'] }]));
    t.heard('b', beat(1, [{ id: 'cafe0002', names: ['web'] }, { id: 'beef0003', names: ['cafe'] }]));
    const ambiguous = t.route('web') as RpcError;
    expect(ambiguous.code).toBe('INVALID_INPUT');
    expect(ambiguous.details).toEqual({ candidates: ['a/web', 'b/web'] });
    expect(t.route('cafe')).toEqual({ host: 'b', ref: 'cafe' });
    expect(t.route('web', (host) => host === 'b')).toEqual({ host: 'b', ref: 'web' });
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
});
