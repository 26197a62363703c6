import { afterEach, describe, expect, it } from 'vitest';
import { dockerContracts, type PlacedContract } from '../../src/contracts/index.js';
import type { CallContext, Operation } from '../../src/dispatcher/index.js';
import type { FleetClients, Lease } from '../../src/fleet/fleet-clients.js';
import { fleetOperations, type FleetRouting } from '../../src/fleet/fleet-operations.js';
import { HostTable } from '../../src/fleet/host-table.js';
import { dockerEngine, dockerOperations } from '../../src/operations/index.js';

interface Sent {
  readonly host: string;
  readonly operation: string;
  readonly input: unknown;
}

/**
 * The gateway routes every Docker operation an agent serves, where its contract's placement
 * says (docs/fleet.md), from the contracts alone. Two hosts, a and b, both hold a
 * container named web; the agents are clients that record what reaches them and answer
 * as an agent would, so each placement shows in which hosts are called with what.
 */
describe('the gateway routes every Docker operation by its contract\'s placement', () => {
  let table: HostTable;
  afterEach(() => table?.close());

  const fleet = (): { operations: Map<string, Operation>; sent: Sent[] } => {
    table = new HostTable({ gone: () => undefined, ask: () => undefined, ignored: () => undefined });
    for (const host of ['a', 'b']) table.heard(host, { startedAt: 1, version: 1, engine: 'up', containers: [{ id: `${host}0000001`, names: ['web'] }] });
    const sent: Sent[] = [];
    const answer = (operation: string): unknown => {
      if (operation.endsWith('/create')) return { containerId: 'c0ffee0001' };
      if (operation === 'docker/container/list') return { containers: [{ id: 'x' }] };
      if (operation === 'docker/image/list') return { images: [{ id: 'y' }] };
      return { answered: operation };
    };
    const lease = (host: string): Lease => ({
      client: {
        call: (operation: string, input: unknown) => {
          sent.push({ host, operation, input });
          return Promise.resolve(answer(operation));
        },
        iterate: (operation: string, input: unknown) => {
          sent.push({ host, operation, input });
          return (async function* () {
            yield answer(operation);
          })();
        },
      } as unknown as Lease['client'],
      release: () => undefined,
    });
    const routing: FleetRouting = { hosts: table, clients: { lease } as unknown as FleetClients };
    return { operations: new Map(fleetOperations(dockerContracts, routing).map((op) => [op.name, op])), sent };
  };

  const context = (): CallContext => ({ signal: new AbortController().signal, identity: null }) as unknown as CallContext;

  const run = async (op: Operation, input: unknown): Promise<unknown> => {
    const result = (op.handler as (input: unknown, ctx: CallContext) => unknown)(input, context());
    if (op.kind !== 'subscription') return await result;
    const items: unknown[] = [];
    for await (const item of result as AsyncIterable<unknown>) items.push(item);
    return items;
  };

  it('the agent serves exactly the contracts the gateway offers, with their names, kinds and schemas', () => {
    // The agent's handlers are built over an engine never asked: only their declarations are compared.
    const served = dockerOperations(dockerEngine('unix:///nonexistent/callwire-test'));
    expect(served.map((op) => op.name).sort()).toEqual(dockerContracts.map((c) => c.name).sort());
    for (const contract of dockerContracts) {
      const op = served.find((o) => o.name === contract.name)!;
      expect([op.kind, op.input, op.output, op.inputStream], contract.name).toEqual([contract.kind, contract.input, contract.output, contract.inputStream]);
      expect(op.input, contract.name).toBe(contract.input);
    }
    const { operations } = fleet();
    expect([...operations.keys()].sort()).toEqual(dockerContracts.map((c) => c.name).sort());
  });

  const byPlacement = (kind: PlacedContract['placement']['kind']): PlacedContract[] => dockerContracts.filter((c) => c.placement.kind === kind);

  it('a container\'s operation goes to the host of HOST/NAME, with the host\'s own reference; a bare name two hosts hold is refused', async () => {
    const contracts = byPlacement('container');
    expect(contracts.map((c) => c.name)).toContain('docker/container/exec');
    for (const contract of contracts) {
      const { operations, sent } = fleet();
      const op = operations.get(contract.name)!;
      expect(op.input.safeParse({ containerId: 'b/web' }).error?.issues.some((i) => i.path[0] === 'containerId'), contract.name).toBeFalsy();
      await run(op, { containerId: 'b/web', extra: 1 });
      expect(sent, contract.name).toEqual([{ host: 'b', operation: contract.name, input: { containerId: 'web', extra: 1 } }]);
      await expect(run(op, { containerId: 'web' }), contract.name).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    }
  });

  it('a host\'s operation goes to the host the caller names, without the name; unnamed in a fleet of two it is refused', async () => {
    const contracts = [...byPlacement('host'), ...byPlacement('new-container')];
    expect(contracts.map((c) => c.name)).toEqual(expect.arrayContaining(['docker/image/pull', 'docker/container/create']));
    for (const contract of contracts) {
      const { operations, sent } = fleet();
      const op = operations.get(contract.name)!;
      await run(op, { host: 'b', image: 'alpine' });
      expect(sent, contract.name).toEqual([{ host: 'b', operation: contract.name, input: { image: 'alpine' } }]);
      await expect(run(op, { image: 'alpine' }), contract.name).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    }
  });

  it('a new container is answered with its host, and its name then leads there', async () => {
    const [contract] = byPlacement('new-container');
    const { operations } = fleet();
    expect(await run(operations.get(contract!.name)!, { host: 'b', image: 'alpine', name: 'fresh' })).toEqual({ containerId: 'c0ffee0001', host: 'b' });
    expect(table.route('fresh')).toEqual({ host: 'b', ref: 'fresh' });
  });

  it('a list goes to every host and merges the rows, each with its host; named, to that host alone', async () => {
    const contracts = byPlacement('every-host');
    expect(contracts.map((c) => c.name).sort()).toEqual(['docker/container/list', 'docker/image/list']);
    for (const contract of contracts) {
      if (contract.placement.kind !== 'every-host') continue;
      const key = contract.placement.rows;
      const { operations, sent } = fleet();
      const op = operations.get(contract.name)!;
      expect(await run(op, null)).toEqual({ [key]: [expect.objectContaining({ host: 'a' }), expect.objectContaining({ host: 'b' })], unavailable: [] });
      expect(sent.map((s) => s.host).sort(), contract.name).toEqual(['a', 'b']);
      sent.length = 0;
      await run(op, { host: 'a' });
      expect(sent.map((s) => s.host), contract.name).toEqual(['a']);
    }
  });
});
