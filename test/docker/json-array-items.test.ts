import { describe, expect, it } from 'vitest';
import { ItemTooLarge, jsonArrayItems } from '../../src/operations/docker/json-array-items.js';

async function items(chunks: string[], max = 1 << 20): Promise<unknown[]> {
  const out: unknown[] = [];
  async function* source(): AsyncGenerator<Buffer> {
    for (const c of chunks) yield Buffer.from(c, 'utf8');
  }
  for await (const item of jsonArrayItems(source(), max)) out.push(item);
  return out;
}

/** The engine's lists, parsed one element at a time (spec §12, DOCKER-2): the same elements however the bytes are cut. */
describe('jsonArrayItems', () => {
  const list = [
    { Id: 'a', Names: ['/a'], Labels: { 'x]': '}{"', quote: 'say \\"hi\\" [', nested: '{[]}' } },
    { Id: 'b', Nested: { deep: [[{ a: 1 }], { b: 'é✓' }] } },
    {},
  ];
  const text = ` \n${JSON.stringify(list, null, 1)}\n`;

  it('yields each element as JSON.parse would, at every cut of the bytes into two chunks', async () => {
    const bytes = Buffer.from(text, 'utf8');
    for (let cut = 0; cut <= bytes.length; cut++) {
      const chunks = [bytes.subarray(0, cut), bytes.subarray(cut)];
      const out: unknown[] = [];
      async function* source(): AsyncGenerator<Buffer> {
        yield* chunks;
      }
      for await (const item of jsonArrayItems(source(), 1 << 20)) out.push(item);
      expect(out, `cut at ${cut}`).toEqual(list);
    }
  });

  it('an empty list has no elements; one byte per chunk changes nothing', async () => {
    expect(await items(['[', ' ', ']'])).toEqual([]);
    expect(await items([...JSON.stringify(list)])).toEqual(list);
  });

  it('an element over the bound throws ItemTooLarge before it is whole', async () => {
    const big = JSON.stringify([{ a: 'x'.repeat(2000) }]);
    await expect(items([big.slice(0, 1000), big.slice(1000)], 1500)).rejects.toBeInstanceOf(ItemTooLarge);
    expect(await items([big], 2100)).toHaveLength(1);
  });

  it('refuses what is not a list of objects, or ends early', async () => {
    await expect(items(['{"a":1}'])).rejects.toThrow(/not a JSON array/);
    await expect(items(['[1,2]'])).rejects.toThrow(/not an object/);
    await expect(items(['[{"a":1}'])).rejects.toThrow(/ended early/);
    await expect(items(['[{"a":1}] x'])).rejects.toThrow(/after the end/);
  });
});
