import { ProtocolError } from './protocol-error.js';

/**
 * How deep a frame nests, read from its bytes before any decoder turns them into
 * values (spec/PROTOCOL.md §9, LIM-2). The decoders and everything after them
 * (validation, re-encoding) recurse once per level, so a frame of a few kilobytes
 * nested thousands deep would exhaust the stack; these scans keep a counter per open
 * level, never a stack frame, and visit each byte at most once.
 */

/** `levels` arrays, each the only element of the one around it: a value exactly that deep (LIM-2). */
export function nestedArrays(levels: number): unknown[] {
  let value: unknown[] = [];
  for (let level = 1; level < levels; level++) value = [value];
  return value;
}

/** An input sits two levels deep in its frame: inside the envelope and its payload (LIM-2). */
export const ENVELOPE_LEVELS = 2;

function tooDeep(maxNestingDepth: number): ProtocolError {
  return new ProtocolError('FRAME_TOO_DEEP', `the frame nests more than maxNestingDepth ${maxNestingDepth} maps and arrays`);
}

/**
 * Throws ProtocolError('FRAME_TOO_DEEP') when JSON text nests objects and arrays more
 * than `maxNestingDepth` deep. Bytes, not characters: the structural characters are
 * ASCII, and no byte of a multi-byte UTF-8 character is. Exact for valid JSON; what
 * it says of invalid JSON does not matter, since the parser then refuses it.
 */
export function checkJsonNesting(bytes: Uint8Array, maxNestingDepth: number): void {
  let depth = 0;
  let inString = false;
  for (let at = 0; at < bytes.length; at++) {
    const byte = bytes[at]!;
    if (inString) {
      if (byte === BACKSLASH) at++;
      else if (byte === QUOTE) inString = false;
    } else if (byte === QUOTE) inString = true;
    else if (byte === OPEN_BRACKET || byte === OPEN_BRACE) {
      if (++depth > maxNestingDepth) throw tooDeep(maxNestingDepth);
    } else if (byte === CLOSE_BRACKET || byte === CLOSE_BRACE) depth--;
  }
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;

/**
 * Throws ProtocolError('FRAME_TOO_DEEP') when msgpack bytes nest maps and arrays more
 * than `maxNestingDepth` deep, and ProtocolError('UNDECODABLE') for an extension that
 * COD-1 rules out. A frame that ends early is left to the decoder to refuse.
 */
export function checkMsgpackNesting(bytes: Uint8Array, maxNestingDepth: number): void {
  const end = bytes.length;
  // Values still to come in each open map or array, innermost last; a map of n pairs holds 2n.
  const open: number[] = [];
  let at = 0;
  while (at < end) {
    const byte = bytes[at++]!;
    // A level holds this many values (a map of n pairs 2n); -1: the value is no level.
    let holds = -1;
    if (byte < 0x80 || byte >= 0xe0) {
      // fixint
    } else if (byte < 0x90) holds = (byte & 0x0f) * 2;
    else if (byte < 0xa0) holds = byte & 0x0f;
    else if (byte < 0xc0) at += byte & 0x1f;
    else {
      if (at + HEADER_BYTES[byte - 0xc0]! > end) return;
      let extension = -1;
      switch (byte) {
        case 0xc4: case 0xd9: at += 1 + bytes[at]!; break; // bin 8, str 8
        case 0xc5: case 0xda: at += 2 + u16(bytes, at); break; // bin 16, str 16
        case 0xc6: case 0xdb: at += 4 + u32(bytes, at); break; // bin 32, str 32
        case 0xc7: extension = bytes[at + 1]!; at += 2 + bytes[at]!; break; // ext 8
        case 0xc8: extension = bytes[at + 2]!; at += 3 + u16(bytes, at); break; // ext 16
        case 0xc9: extension = bytes[at + 4]!; at += 5 + u32(bytes, at); break; // ext 32
        case 0xd4: case 0xd5: case 0xd6: case 0xd7: case 0xd8: extension = bytes[at]!; at += 1 + (1 << (byte - 0xd4)); break; // fixext 1 to 16
        case 0xdc: holds = u16(bytes, at); at += 2; break; // array 16
        case 0xdd: holds = u32(bytes, at); at += 4; break; // array 32
        case 0xde: holds = u16(bytes, at) * 2; at += 2; break; // map 16
        case 0xdf: holds = u32(bytes, at) * 2; at += 4; break; // map 32
        case 0xcc: case 0xd0: at += 1; break;
        case 0xcd: case 0xd1: at += 2; break;
        case 0xca: case 0xce: case 0xd2: at += 4; break;
        case 0xcb: case 0xcf: case 0xd3: at += 8; break;
        default: break; // nil, false, true; 0xc1 is left to the decoder to refuse
      }
      if (extension === RECORD || extension === BUNDLE) {
        throw new ProtocolError('UNDECODABLE', `msgpack extension type ${extension} is not allowed: every frame decodes on its own (COD-1)`);
      }
      if (extension === ERROR || extension === SET || extension === REGEXP) holds = 1;
    }
    if (holds >= 0 && open.length >= maxNestingDepth) throw tooDeep(maxNestingDepth);
    if (holds > 0) {
      open.push(holds);
      continue;
    }
    // A whole value: it counts against its container, which may end with it, and so on outwards.
    while (open.length > 0 && --open[open.length - 1]! === 0) open.pop();
  }
}

/** msgpackr's extensions whose decoding reads the value after them: that value nests one level deeper, as an array's element would. */
const ERROR = 0x65;
const SET = 0x73;
const REGEXP = 0x78;
/** msgpackr's record definitions and string bundles change how later bytes decode, so no scan can follow them; COD-1 rules both out. */
const RECORD = 0x72;
const BUNDLE = 0x62;

/** For the bytes 0xc0 to 0xdf: how many bytes after the first say how long the value is, or which extension it is. */
const HEADER_BYTES = [0, 0, 0, 0, 1, 2, 4, 2, 3, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 2, 4, 2, 4, 2, 4];

const u16 = (bytes: Uint8Array, at: number): number => (bytes[at]! << 8) | bytes[at + 1]!;
const u32 = (bytes: Uint8Array, at: number): number => bytes[at]! * 0x1000000 + ((bytes[at + 1]! << 16) | (bytes[at + 2]! << 8) | bytes[at + 3]!);
