import { readFileSync } from 'node:fs';
import { codecs, type CodecName } from '../../src/protocol/index.js';

export interface VectorFile {
  codec: CodecName;
  valid: { name: string; hex: string; frame: unknown }[];
  invalid: { name: string; hex: string; error: { kind: string; field?: string; answer: string } }[];
}

export function loadVectors(codec: CodecName): VectorFile {
  return JSON.parse(readFileSync(new URL(`../../spec/vectors/${codec}.json`, import.meta.url), 'utf8')) as VectorFile;
}

export const fromHex = (hex: string): Uint8Array => new Uint8Array(Buffer.from(hex, 'hex'));

/** Bytes become {"$base64": ...} so decoded frames compare with the vector files. */
export const jsonSafe = (value: unknown): unknown =>
  JSON.parse(new TextDecoder().decode(codecs.json.encode(value))) as unknown;

export function chunk(bytes: Uint8Array, sizes: (i: number) => number): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let at = 0, i = 0; at < bytes.byteLength; i++) {
    const size = Math.max(1, sizes(i));
    out.push(bytes.subarray(at, at + size));
    at += size;
  }
  return out;
}
