import { msgpackValueAt } from './codec.js';
import type { Envelope } from './envelope.js';
import { eventTypes } from './event-types.js';
import { knownEnvelope } from './known-envelope.js';
import { checkMsgpackNesting } from './nesting.js';

/**
 * A msgpack frame read for the envelope's fixed shape (spec/PROTOCOL.md §3, §5.3): a map
 * of `type`, `id` and `payload`, in that order, as every peer's encoder writes it from
 * an object literal, with an ASCII id. Its header is matched byte by byte and only the
 * payload goes through the general decoder, then knownEnvelope checks it. Anything else
 * (another order, another encoding of a string, a bad field, a frame too deep) is
 * `undefined`, and the general decoder and the schemas decide it, with their own error.
 */
export function readMsgpackEnvelope(bytes: Uint8Array, maxNestingDepth: number): Envelope | undefined {
  if (bytes[0] !== FIXMAP_3 || !matches(bytes, 1, TYPE_KEY)) return undefined;
  let at = 1 + TYPE_KEY.length;
  const type = knownType(bytes, at);
  if (type === undefined) return undefined;
  at += 1 + type.length;
  if (!matches(bytes, at, ID_KEY)) return undefined;
  at += ID_KEY.length;
  const head = bytes[at];
  let length: number;
  if (head !== undefined && head >= FIXSTR && head < FIXSTR + 32) length = head - FIXSTR;
  else if (head === STR8 && at + 1 < bytes.length) length = bytes[++at]!;
  else return undefined;
  at++;
  const idEnd = at + length;
  if (idEnd > bytes.length) return undefined;
  let id = '';
  for (let i = at; i < idEnd; i++) {
    const byte = bytes[i]!;
    if (byte >= 0x80) return undefined; // UTF-8 beyond ASCII is the general decoder's to read
    id += String.fromCharCode(byte);
  }
  at = idEnd;
  if (!matches(bytes, at, PAYLOAD_KEY)) return undefined;
  at += PAYLOAD_KEY.length;
  if (at >= bytes.length) return undefined;
  let payload: unknown;
  try {
    checkMsgpackNesting(bytes, maxNestingDepth);
    payload = msgpackValueAt(bytes, at);
  } catch {
    return undefined;
  }
  return knownEnvelope(type, id, payload);
}

const FIXMAP_3 = 0x83;
const FIXSTR = 0xa0;
const STR8 = 0xd9;

const ascii = (text: string): Uint8Array => Uint8Array.from(text, (c) => c.charCodeAt(0));
/** A short string's msgpack: its fixstr header, then its bytes. */
const fixstr = (text: string): Uint8Array => Uint8Array.of(FIXSTR + text.length, ...ascii(text));

const TYPE_KEY = fixstr('type');
const ID_KEY = fixstr('id');
const PAYLOAD_KEY = fixstr('payload');
/** Each event type's msgpack, its own string returned for it (no new string per frame). */
const TYPES = eventTypes.map((type) => ({ type, bytes: fixstr(type) }));

function knownType(bytes: Uint8Array, at: number): string | undefined {
  for (const known of TYPES) if (matches(bytes, at, known.bytes)) return known.type;
  return undefined;
}

function matches(bytes: Uint8Array, at: number, expected: Uint8Array): boolean {
  if (at + expected.length > bytes.length) return false;
  for (let i = 0; i < expected.length; i++) if (bytes[at + i] !== expected[i]) return false;
  return true;
}
