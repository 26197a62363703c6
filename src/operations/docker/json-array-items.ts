/** An element of the list over its bound: thrown before the element is whole. */
export class ItemTooLarge extends Error {}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN = new Set([0x7b, 0x5b]); // { [
const CLOSE = new Set([0x7d, 0x5d]); // } ]

/**
 * The elements of one JSON array of objects, parsed one at a time as the bytes come
 * (the engine's container and image lists, spec §12 DOCKER-2): the list is never held
 * whole, only the element being read, which may be at most `maxItemBytes` (past it,
 * ItemTooLarge). Anything but an array of objects throws a plain Error.
 */
export async function* jsonArrayItems(source: AsyncIterable<Buffer>, maxItemBytes: number): AsyncGenerator<unknown> {
  let depth = 0; // brackets open, the array's own included
  let inString = false;
  let escaped = false;
  let item: Buffer[] = [];
  let itemBytes = 0;
  let ended = false;
  for await (const chunk of source) {
    let from = -1; // where the current item starts in this chunk
    if (depth > 1) from = 0;
    for (let at = 0; at < chunk.length; at++) {
      const byte = chunk[at]!;
      if (inString) {
        if (escaped) escaped = false;
        else if (byte === BACKSLASH) escaped = true;
        else if (byte === QUOTE) inString = false;
        continue;
      }
      if (byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09) continue;
      if (ended) throw new Error('data after the end of the list');
      if (depth === 0) {
        if (byte !== 0x5b) throw new Error('not a JSON array');
        depth = 1;
      } else if (depth === 1) {
        if (byte === 0x2c) continue; // a comma between items
        if (byte === 0x5d) {
          ended = true;
          depth = 0;
        } else if (byte === 0x7b) {
          depth = 2;
          from = at;
        } else throw new Error('an element of the list is not an object');
      } else if (byte === QUOTE) inString = true;
      else if (OPEN.has(byte)) depth++;
      else if (CLOSE.has(byte) && --depth === 1) {
        item.push(chunk.subarray(from, at + 1));
        itemBytes += at + 1 - from;
        if (itemBytes > maxItemBytes) throw new ItemTooLarge();
        const text = Buffer.concat(item, itemBytes).toString('utf8');
        item = [];
        itemBytes = 0;
        from = -1;
        yield JSON.parse(text) as unknown;
      }
    }
    if (depth > 1 && from >= 0) {
      item.push(chunk.subarray(from));
      itemBytes += chunk.length - from;
      if (itemBytes > maxItemBytes) throw new ItemTooLarge();
    }
  }
  if (!ended) throw new Error('the list ended early');
}
