import { describe, expect, it } from 'vitest';
import type { Client } from '../../src/client/index.js';
import { RpcError } from '../../src/client/index.js';
import { exampleContainer } from '../../src/lab/example-container.js';

/** A client whose docker/container/list answers `rows` (or fails). */
const listing = (rows: object[] | Error): Client =>
  ({
    call: async (operation: string, input: unknown) => {
      expect(operation).toBe('docker/container/list');
      expect(input).toEqual({ all: false });
      if (rows instanceof Error) throw rows;
      return { containers: rows };
    },
  }) as unknown as Client;

describe("the Lab's exec example names a container that runs", () => {
  it("npm start's demo container where it runs, else the first running one", async () => {
    expect(await exampleContainer(listing([{ names: ['/web'] }, { names: ['/callwire-demo'] }]), false)).toBe('callwire-demo');
    expect(await exampleContainer(listing([{ names: ['/web'] }, { names: ['/db'] }]), false)).toBe('web');
  });

  it('on a fleet: HOST/demo where npm run fleet made it, else HOST/NAME of a container a hand-made fleet runs', async () => {
    expect(await exampleContainer(listing([{ names: ['/web'], host: 'a' }, { names: ['/demo'], host: 'b' }]), true)).toBe('b/demo');
    expect(await exampleContainer(listing([{ names: ['/worker'], host: 'edge1' }]), true)).toBe('edge1/worker');
  });

  it('nothing running, or a caller who may not list: no example', async () => {
    expect(await exampleContainer(listing([]), true)).toBeUndefined();
    expect(await exampleContainer(listing(new RpcError('FORBIDDEN', 'no scope')), false)).toBeUndefined();
  });
});
