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
  /** A client whose container list answers these rows (what a gateway's merged list looks like). */
  const listing = (containers: unknown[], unavailable?: unknown[]) => {
    const asked: unknown[] = [];
    const client = {
      call: async (contract: { name: string }, input: unknown) => {
        asked.push([contract.name, input]);
        return { containers, ...(unavailable ? { unavailable } : {}) };
      },
    } as unknown as Client;
    return { client, asked };
  };
  const row = (name: string, labels: Record<string, string>, host?: string, state = 'running') => ({ id: name, names: [`/${name}`], image: 'i', state, status: '', labels, created: 0, ...(host ? { host } : {}) });

  it('asks the list for running containers and names fleet targets HOST/NAME, sorted, each once', async () => {
    const { client, asked } = listing([row('web-2', { role: 'web' }, 'b'), row('web-1', { role: 'web' }, 'a'), row('db', { role: 'db' }, 'a'), row('web-3', { role: 'web' }, 'a', 'exited'), row('web-1', { role: 'web' }, 'a')]);
    const selected = await selectTargetsFrom(client, { labels: ['role=web'] });
    expect(selected.targets).toEqual(['a/web-1', 'b/web-2']);
    expect(asked).toEqual([['docker/container/list', { all: false, owned_only: false }]]);
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

  it('reports the hosts that did not answer only when the selection could match them', async () => {
    const { client } = listing([row('web-1', { role: 'web' }, 'a')], [{ host: 'b', error: 'host b did not answer within 5000 ms' }]);
    expect((await selectTargetsFrom(client, { labels: ['role'] })).unavailable).toEqual([{ host: 'b', error: 'host b did not answer within 5000 ms' }]);
    expect((await selectTargetsFrom(client, { patterns: ['a/*'] })).unavailable).toEqual([]);
  });
});
