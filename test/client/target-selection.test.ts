import { describe, expect, it } from 'vitest';
import type { Client } from '../../src/client/index.js';
import { checkSelection, globMatches, isPrintableTarget, labelMatches, patternMatches, selectionMatches, selectionMayReachHost, selectTargetsFrom } from '../../src/client/target-selection.js';
import type { RpcError } from '../../src/protocol/index.js';

describe('globs', () => {
  it('a * matches any run of characters, empty included; the rest is literal', () => {
    expect(globMatches('web-*', 'web-1')).toBe(true);
    expect(globMatches('web-*', 'web-')).toBe(true);
    expect(globMatches('web-*', 'api-1')).toBe(false);
    expect(globMatches('*-1', 'web-1')).toBe(true);
    expect(globMatches('w*b*1', 'web-1')).toBe(true);
    expect(globMatches('w*x*1', 'web-1')).toBe(false);
    expect(globMatches('*', '')).toBe(true);
    expect(globMatches('web', 'web-1')).toBe(false);
    // Overlapping prefix and suffix are not one character counted twice.
    expect(globMatches('ab*ba', 'aba')).toBe(false);
    // A middle part may not be found inside the suffix.
    expect(globMatches('a*c*c', 'ac')).toBe(false);
    expect(globMatches('a*c*c', 'acc')).toBe(true);
    // A dot is a dot, not any character.
    expect(globMatches('a.b', 'axb')).toBe(false);
  });

  it('a pattern without / matches the name on any host; HOST/NAME matches both parts, and only rows with a host', () => {
    const row = { host: 'a', name: 'web-2', labels: {} };
    expect(patternMatches('web-2', row)).toBe(true);
    expect(patternMatches('a/web-2', row)).toBe(true);
    expect(patternMatches('*/web-2', row)).toBe(true);
    expect(patternMatches('a/*', row)).toBe(true);
    expect(patternMatches('b/*', row)).toBe(false);
    expect(patternMatches('a/web-1', row)).toBe(false);
    expect(patternMatches('a/*', { name: 'web-2', labels: {} })).toBe(false);
  });

  it('labels: KEY needs the label set (any value), KEY=VALUE that value exactly', () => {
    const labels = { role: 'web', empty: '', 'a=b': 'c' };
    expect(labelMatches('role', labels)).toBe(true);
    expect(labelMatches('role=web', labels)).toBe(true);
    expect(labelMatches('role=we', labels)).toBe(false);
    expect(labelMatches('empty=', labels)).toBe(true);
    expect(labelMatches('tier', labels)).toBe(false);
    // An inherited property is not a label.
    expect(labelMatches('constructor', labels)).toBe(false);
  });

  it('labels and patterns together are their intersection; every label must match, any pattern may', () => {
    const selection = { labels: ['role=web', 'tier'], patterns: ['a/*', 'c/x'] };
    expect(selectionMatches(selection, { host: 'a', name: 'n', labels: { role: 'web', tier: '1' } })).toBe(true);
    expect(selectionMatches(selection, { host: 'a', name: 'n', labels: { role: 'web' } })).toBe(false);
    expect(selectionMatches(selection, { host: 'b', name: 'n', labels: { role: 'web', tier: '1' } })).toBe(false);
    expect(selectionMatches({ labels: ['role=web'] }, { host: 'b', name: 'n', labels: { role: 'web' } })).toBe(true);
  });

  it('a selection that names nothing, or a malformed pattern or label, is INVALID_INPUT', () => {
    const refused = (selection: Parameters<typeof checkSelection>[0]): string | undefined => {
      try {
        checkSelection(selection);
        return undefined;
      } catch (error) {
        return (error as RpcError).code;
      }
    };
    expect(refused({})).toBe('INVALID_INPUT');
    expect(refused({ labels: [], patterns: [] })).toBe('INVALID_INPUT');
    expect(refused({ patterns: ['a/b/c'] })).toBe('INVALID_INPUT');
    expect(refused({ patterns: ['a/'] })).toBe('INVALID_INPUT');
    expect(refused({ labels: ['=web'] })).toBe('INVALID_INPUT');
    expect(refused({ patterns: ['*'] })).toBeUndefined();
  });

  it('a host that did not answer matters when a pattern could match it', () => {
    expect(selectionMayReachHost({ labels: ['role'] }, 'b')).toBe(true);
    expect(selectionMayReachHost({ patterns: ['web-*'] }, 'b')).toBe(true);
    expect(selectionMayReachHost({ patterns: ['a/*'] }, 'b')).toBe(false);
    expect(selectionMayReachHost({ patterns: ['a/*', 'b*/x'] }, 'b2')).toBe(true);
  });

  it('only a name of the container-name grammar is printable as a target', () => {
    expect(isPrintableTarget('web-1', 'a')).toBe(true);
    expect(isPrintableTarget('web\n1', undefined)).toBe(false);
    expect(isPrintableTarget('web\u001b[2J', undefined)).toBe(false);
    expect(isPrintableTarget('web', 'a\nb')).toBe(false);
  });
});

describe('selectTargetsFrom', () => {
  /** A client whose container list answers these rows (what a gateway's merged list looks like), for a caller of `subject`. */
  const listing = (containers: unknown[], unavailable?: unknown[], subject: string | null = 'alice') => {
    const asked: [string, unknown][] = [];
    const client = {
      call: async (contract: { name: string }, input: unknown) => {
        asked.push([contract.name, input]);
        if (contract.name === 'services/info') return { identity: subject === null ? null : { subject, scopes: ['*'] } };
        return { containers, ...(unavailable ? { unavailable } : {}) };
      },
    } as unknown as Client;
    return { client, asked };
  };
  const row = (name: string, labels: Record<string, string>, host?: string, state = 'running') => ({ id: name, names: [`/${name}`], image: 'i', state, status: '', labels, created: 0, ...(host ? { host } : {}) });
  /** Labels of a container created through callwire by `subject`. */
  const ownedBy = (subject: string, labels: Record<string, string> = {}) => ({ ...labels, 'callwire.managed': 'true', 'callwire.owner': subject });

  it('asks the list for running containers and names fleet targets HOST/NAME, sorted, each once', async () => {
    const { client, asked } = listing([row('web-2', { role: 'web' }, 'b'), row('web-1', { role: 'web' }, 'a'), row('db', { role: 'db' }, 'a'), row('web-3', { role: 'web' }, 'a', 'exited'), row('web-1', { role: 'web' }, 'a')]);
    const selected = await selectTargetsFrom(client, { labels: ['role=web'] });
    expect(selected.targets).toEqual(['a/web-1', 'b/web-2']);
    expect(asked).toContainEqual(['docker/container/list', { all: false, owned_only: false }]);
  });

  it('on a single server (rows without host) targets are bare names', async () => {
    const { client } = listing([row('web-1', { role: 'web' }), row('web-2', {})]);
    expect((await selectTargetsFrom(client, { patterns: ['web-*'] })).targets).toEqual(['web-1', 'web-2']);
    expect((await selectTargetsFrom(client, { patterns: ['*/web-*'] })).targets).toEqual([]);
  });

  it('drops a row whose name could carry a newline or an escape into a prefix', async () => {
    const { client } = listing([row('ok', { role: 'web' }), row('evil\nb/x: fake', { role: 'web' })]);
    expect((await selectTargetsFrom(client, { labels: ['role'] })).targets).toEqual(['ok']);
  });

  it('a label or a glob takes the caller\'s own containers and those callwire did not create, never another caller\'s', async () => {
    const rows = [row('mine', ownedBy('alice', { role: 'web' })), row('bobs', ownedBy('bob', { role: 'web' })), row('operators', { role: 'web' })];
    const { client } = listing(rows);
    const byLabel = await selectTargetsFrom(client, { labels: ['role=web'] });
    expect(byLabel.targets).toEqual(['mine', 'operators']);
    expect(Object.fromEntries(byLabel.owners)).toEqual({ mine: 'alice', operators: null });
    expect(byLabel.othersLeftOut).toBe(1);
    expect((await selectTargetsFrom(client, { patterns: ['*'] })).targets).toEqual(['mine', 'operators']);
    // A caller's own label cannot make a container of bob's look unmanaged: managed is what counts.
    expect((await selectTargetsFrom(listing([row('bobs', { ...ownedBy('bob'), 'callwire.owner': 'alice', 'callwire.managed': 'true' })], undefined, 'carol').client, { patterns: ['*'] })).targets).toEqual([]);
    // An anonymous caller owns nothing: only what callwire did not create.
    expect((await selectTargetsFrom(listing(rows, undefined, null).client, { labels: ['role'] })).targets).toEqual(['operators']);
  });

  it('anyOwner takes every owner\'s; a name written whole is taken whoever owns it', async () => {
    const { client, asked } = listing([row('mine', ownedBy('alice', { role: 'web' })), row('bobs', ownedBy('bob', { role: 'web' }))]);
    const any = await selectTargetsFrom(client, { labels: ['role=web'], anyOwner: true });
    expect(any.targets).toEqual(['bobs', 'mine']);
    expect(any.othersLeftOut).toBe(0);
    // No identity needed to take every owner's.
    expect(asked.filter(([name]) => name === 'services/info')).toHaveLength(0);
    const named = await selectTargetsFrom(client, { patterns: ['bobs'] });
    expect(named.targets).toEqual(['bobs']);
    expect(named.owners.get('bobs')).toBe('bob');
    expect((await selectTargetsFrom(client, { labels: ['role=web'], patterns: ['bobs', 'b*'] })).targets).toEqual(['bobs']);
  });

  it('a host that did not answer is one target not run, HOST/*, when the selection could match it', async () => {
    const { client } = listing([row('web-1', { role: 'web' }, 'a')], [{ host: 'b', error: 'host b did not answer within 5000 ms' }]);
    expect((await selectTargetsFrom(client, { labels: ['role'] })).notRun).toEqual([
      { target: 'b/*', error: { code: 'UNAVAILABLE', message: 'host b did not answer the list: host b did not answer within 5000 ms' }, stdoutBytes: 0, stderrBytes: 0 },
    ]);
    expect((await selectTargetsFrom(client, { patterns: ['a/*'] })).notRun).toEqual([]);
  });

  it('a down host: the containers its last table had running that the selection matches are not run, named; a pattern naming it that matched nothing says it is down', async () => {
    const down = { host: 'b', error: 'host b is down: no heartbeat for 12 s', containers: [row('demo', {}), row('web-9', { role: 'web' }), row('old', {}, undefined, 'exited')] };
    const { client } = listing([row('demo', {}, 'a')], [down]);
    const star = await selectTargetsFrom(client, { patterns: ['*/demo'] });
    expect(star.targets).toEqual(['a/demo']);
    expect(star.notRun).toEqual([{ target: 'b/demo', error: { code: 'UNAVAILABLE', message: 'host b is down: no heartbeat for 12 s' }, stdoutBytes: 0, stderrBytes: 0 }]);
    expect((await selectTargetsFrom(client, { labels: ['role=web'] })).notRun.map((r) => r.target)).toEqual(['b/web-9']);
    // The last table had nothing the selection matches: nothing is claimed of the host.
    expect((await selectTargetsFrom(client, { patterns: ['*/nothing-*'] })).notRun).toEqual([]);
    const empty = await selectTargetsFrom(listing([], [{ ...down, containers: [] }]).client, { patterns: ['b/*'] });
    expect(empty.targets).toEqual([]);
    expect(empty.notRun).toEqual([{ target: 'b/*', error: { code: 'UNAVAILABLE', message: 'host b is down: no heartbeat for 12 s' }, stdoutBytes: 0, stderrBytes: 0 }]);
  });

  it('a name written whole that no running container has runs as written (the server says why); with labels it is not run, saying so', async () => {
    const { client } = listing([row('web-1', {}), row('web-3', {}, undefined, 'exited')]);
    expect((await selectTargetsFrom(client, { patterns: ['web-1', 'nosuch', 'web-3'] })).targets).toEqual(['nosuch', 'web-1', 'web-3']);
    expect((await selectTargetsFrom(client, { patterns: ['web-1', 'nosuch'] })).owners.has('nosuch')).toBe(false);
    const labelled = await selectTargetsFrom(client, { labels: ['role=web'], patterns: ['web-1'] });
    expect(labelled.targets).toEqual([]);
    expect(labelled.notRun).toEqual([{ target: 'web-1', error: { code: 'CONTAINER_NOT_FOUND', message: 'no running container of that name has the label role=web' }, stdoutBytes: 0, stderrBytes: 0 }]);
    // A glob that matches nothing is a description that fits nobody, not a name that ran nowhere.
    expect(await selectTargetsFrom(client, { patterns: ['db-*'] })).toMatchObject({ targets: [], notRun: [] });
    // A name that could not be printed as a prefix is not sent.
    expect((await selectTargetsFrom(client, { patterns: ['x\u001b[2J'] })).notRun.map((r) => r.error?.code)).toEqual(['INVALID_INPUT']);
  });
});
