import { codecs, type CodecName } from '../../src/protocol/index.js';

/**
 * The encoding of `template`, whose last value is `null`, with that null inside
 * `levels` arrays (`[[…[null]…]]`), spliced into the bytes: encoders recurse once per
 * level, and would overflow the stack on the deepest values a test sends.
 */
export function nestedEncoding(codec: CodecName, template: unknown, levels: number): Uint8Array {
  const whole = codecs[codec].encode(template);
  if (codec === 'msgpack') {
    if (whole[whole.byteLength - 1] !== 0xc0) throw new Error('the template must end in null');
    const out = new Uint8Array(whole.byteLength + levels);
    out.set(whole.subarray(0, whole.byteLength - 1));
    out.fill(0x91, whole.byteLength - 1, whole.byteLength - 1 + levels); // an array of one value
    out[out.byteLength - 1] = 0xc0;
    return out;
  }
  const text = new TextDecoder().decode(whole);
  const at = text.lastIndexOf('null');
  if (at < 0) throw new Error('the template must end in null');
  return new TextEncoder().encode(`${text.slice(0, at)}${'['.repeat(levels)}null${']'.repeat(levels)}${text.slice(at + 4)}`);
}

/** `levels` maps or arrays, each the only value of the one around it; the innermost is empty. */
export function nested(levels: number, kind: 'array' | 'map' = 'array'): unknown {
  let value: unknown = kind === 'array' ? [] : {};
  for (let level = 1; level < levels; level++) value = kind === 'array' ? [value] : { a: value };
  return value;
}
