import { describe, expect, it } from 'vitest';
import { ContainerIndex } from '../../src/fleet/container-index.js';
import { HostTable } from '../../src/fleet/host-table.js';

const all = (): boolean => true;
const found = (index: ContainerIndex, ref: string, include: (host: string) => boolean = all): string[] =>
  index
    .find(ref, include)
    .map((m) => `${m.host}/${m.container.id}${m.exact ? '!' : ''}`)
    .sort();

describe('the fleet\'s container index: names to hosts, ids sorted per host', () => {
  it('finds a name on every host that announces it, an exact id, and every id a prefix starts', () => {
    const index = new ContainerIndex();
    index.set('a', [{ id: 'cafe01', names: ['web'] }, { id: 'beef01', names: ['db'] }, { id: 'cafe02', names: [] }]);
    index.set('b', [{ id: 'cafe03', names: ['web'] }, { id: 'caff00', names: ['cache'] }]);
    expect(found(index, 'web')).toEqual(['a/cafe01!', 'b/cafe03!']);
    expect(found(index, 'cafe')).toEqual(['a/cafe01', 'a/cafe02', 'b/cafe03']);
    expect(found(index, 'caf')).toEqual(['a/cafe01', 'a/cafe02', 'b/cafe03', 'b/caff00']);
    expect(found(index, 'beef01')).toEqual(['a/beef01!']);
    expect(found(index, 'cafe03')).toEqual(['b/cafe03!']);
    expect(found(index, 'zz')).toEqual([]);
    // A container named as another's id prefix is one match by its name, and the id it prefixes another.
    index.set('c', [{ id: 'dd01', names: ['cafe'] }]);
    expect(found(index, 'cafe')).toEqual(['a/cafe01', 'a/cafe02', 'b/cafe03', 'c/dd01!']);
  });

  it('a name that cannot begin an id is never an id prefix: a host announcing ids that are not hex cannot make another host\'s name ambiguous', () => {
    const index = new ContainerIndex();
    index.set('a', [{ id: 'cafe01', names: ['web-1'] }]);
    // A hostile host's table: "ids" that start with the other host's container name.
    index.set('b', [{ id: 'web-1-hijack', names: [] }, { id: 'web-10', names: [] }]);
    expect(found(index, 'web-1')).toEqual(['a/cafe01!']);
    // Its hex ids are still found by their prefix.
    index.set('b', [{ id: 'cafe02', names: [] }]);
    expect(found(index, 'cafe')).toEqual(['a/cafe01', 'b/cafe02']);
  });

  it('leaves out the hosts the caller may not reach', () => {
    const index = new ContainerIndex();
    index.set('a', [{ id: 'a1', names: ['web'] }]);
    index.set('b', [{ id: 'b1', names: ['web'] }]);
    expect(found(index, 'web', (h) => h === 'b')).toEqual(['b/b1!']);
    expect(found(index, 'a1', (h) => h === 'b')).toEqual([]);
  });

  it('a new table replaces the host\'s names and ids; a container added is found; a host removed is not', () => {
    const index = new ContainerIndex();
    index.set('a', [{ id: 'a1', names: ['old'] }]);
    index.set('a', [{ id: 'a2', names: ['new'] }]);
    expect(found(index, 'old')).toEqual([]);
    expect(found(index, 'a1')).toEqual([]);
    expect(found(index, 'new')).toEqual(['a/a2!']);
    index.add('a', { id: 'a0', names: ['added'] });
    expect(found(index, 'added')).toEqual(['a/a0!']);
    expect(found(index, 'a')).toEqual(['a/a0', 'a/a2']);
    index.remove('a');
    expect(found(index, 'new')).toEqual([]);
    expect(found(index, 'a')).toEqual([]);
  });

  it('the host table routes through it: a name gone from a host\'s newer table no longer leads there', () => {
    const table = new HostTable({ gone: () => undefined, ask: () => undefined });
    try {
      table.heard('a', { startedAt: 1, version: 1, engine: 'up', containers: [{ id: 'aaaa', names: ['web'] }] });
      expect(table.route('web')).toEqual({ host: 'a', ref: 'web' });
      table.heard('a', { startedAt: 1, version: 2, engine: 'up', containers: [{ id: 'aaab', names: ['api'] }] });
      expect(table.route('web')).toMatchObject({ code: 'CONTAINER_NOT_FOUND' });
      expect(table.route('api')).toEqual({ host: 'a', ref: 'api' });
      table.learn('a', { id: 'cccc', names: ['made'] });
      expect(table.route('made')).toEqual({ host: 'a', ref: 'made' });
      // A restarted agent's old table holds its names until the new agent's first table replaces it.
      table.heard('a', { startedAt: 2, version: 1, engine: 'up' });
      expect(table.route('api')).toEqual({ host: 'a', ref: 'api' });
      table.heard('a', { startedAt: 2, version: 1, engine: 'up', containers: [{ id: 'dddd', names: ['new'] }] });
      expect(table.route('api')).toMatchObject({ code: 'CONTAINER_NOT_FOUND' });
      expect(table.route('new')).toEqual({ host: 'a', ref: 'new' });
    } finally {
      table.close();
    }
  });
});

describe('the gateway\'s list of running containers from its table', () => {
  const row = (id: string, state: string): Record<string, unknown> => ({ id, names: [id], labels: { role: 'web' }, image: 'img', state, status: 'Up', created: 5 });

  it('lists a host\'s running containers with their labels only while its table is current and whole', () => {
    const table = new HostTable({ gone: () => undefined, ask: () => undefined });
    try {
      table.heard('a', { startedAt: 1, version: 1, engine: 'up', containers: [row('r1', 'running'), row('x1', 'exited')] as never });
      expect(table.runningRows('a')).toEqual([{ id: 'r1', names: ['/r1'], labels: { role: 'web' }, image: 'img', state: 'running', status: 'Up', created: 5 }]);
      // A beat ahead of the table: the host is asked, not answered for.
      table.heard('a', { startedAt: 1, version: 2, engine: 'up' });
      expect(table.runningRows('a')).toBeUndefined();
      table.heard('a', { startedAt: 1, version: 2, engine: 'up', containers: [row('r1', 'running'), { id: 'r2', names: ['r2'], labelsOmitted: true, state: 'running' }] as never });
      expect(table.runningRows('a')).toBeUndefined();
      table.heard('a', { startedAt: 1, version: 3, engine: 'up', containers: [row('r1', 'running')] as never });
      expect(table.runningRows('a')).toHaveLength(1);
      // A container the gateway made has no row yet: the host is asked until its table has it.
      table.learn('a', { id: 'new', names: ['new'] });
      expect(table.runningRows('a')).toBeUndefined();
      expect(table.runningRows('zz')).toBeUndefined();
    } finally {
      table.close();
    }
  });
});
