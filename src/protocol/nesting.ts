import { ProtocolError } from './protocol-error.js';

/**
 * How deep a frame nests, read from its bytes before any decoder turns them into
 * values (spec/PROTOCOL.md §9, LIM-2). The decoders and everything after them
 * (validation, re-encoding) recurse once per level, so a frame of a few kilobytes
 * nested thousands deep would exhaust the stack; these scans keep a counter per open
 * level, never a stack frame, and visit each byte at most once.
 */

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
 * msgpackr's extension types whose decoding reads the value after them (Error, Set,
 * RegExp): that value nests one level deeper, as an array's element would.
 */
const EXTENSIONS_WITH_A_VALUE = new Set([0x65, 0x73, 0x78]);
/**
 * msgpackr's record definitions and string bundles: they change how later bytes
 * decode, so no scan can follow them. COD-1 rules both out of the protocol.
 */
const STATEFUL_EXTENSIONS = new Set([0x62, 0x72]);

/**
 * Throws ProtocolError('FRAME_TOO_DEEP') when msgpack bytes nest maps and arrays more
 * than `maxNestingDepth` deep, and ProtocolError('UNDECODABLE') for an extension that
 * COD-1 rules out. A frame that ends early is left to the decoder to refuse.
 */
export function checkMsgpackNesting(bytes: Uint8Array, maxNestingDepth: number): void {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const end = bytes.length;
  // Values still to come in each open map or array, innermost last; a map of n pairs holds 2n.
  const open: number[] = [];
  let at = 0;
  const u8 = (): number => bytes[at++]!;
  const u16 = (): number => ((at += 2), view.getUint16(at - 2));
  const u32 = (): number => ((at += 4), view.getUint32(at - 4));
  while (at < end) {
    const byte = bytes[at++]!;
    // Whether this value is a level of its own, how many values it holds, and how many bytes of data follow its header.
    let level = false;
    let holds = 0;
    let skip = 0;
    if (byte >= 0x80 && byte <= 0x8f) [level, holds] = [true, (byte & 0x0f) * 2]; // fixmap
    else if (byte >= 0x90 && byte <= 0x9f) [level, holds] = [true, byte & 0x0f]; // fixarray
    else if (byte >= 0xa0 && byte <= 0xbf) skip = byte & 0x1f; // fixstr
    else if (byte >= 0xc0 && byte <= 0xdf) {
      if (at + headerBytes(byte) > end) return;
      let extension: number | undefined;
      switch (byte) {
        case 0xc4: case 0xd9: skip = u8(); break; // bin 8, str 8
        case 0xc5: case 0xda: skip = u16(); break; // bin 16, str 16
        case 0xc6: case 0xdb: skip = u32(); break; // bin 32, str 32
        case 0xc7: skip = u8(); extension = u8(); break; // ext 8
        case 0xc8: skip = u16(); extension = u8(); break; // ext 16
        case 0xc9: skip = u32(); extension = u8(); break; // ext 32
        case 0xd4: case 0xd5: case 0xd6: case 0xd7: case 0xd8: skip = 1 << (byte - 0xd4); extension = u8(); break; // fixext 1 to 16
        case 0xdc: [level, holds] = [true, u16()]; break; // array 16
        case 0xdd: [level, holds] = [true, u32()]; break; // array 32
        case 0xde: [level, holds] = [true, u16() * 2]; break; // map 16
        case 0xdf: [level, holds] = [true, u32() * 2]; break; // map 32
        case 0xcc: case 0xd0: skip = 1; break;
        case 0xcd: case 0xd1: skip = 2; break;
        case 0xca: case 0xce: case 0xd2: skip = 4; break;
        case 0xcb: case 0xcf: case 0xd3: skip = 8; break;
        default: break; // nil, false, true; 0xc1 is left to the decoder to refuse
      }
      if (extension !== undefined && STATEFUL_EXTENSIONS.has(extension)) {
        throw new ProtocolError('UNDECODABLE', `msgpack extension type ${extension} is not allowed: every frame decodes on its own (COD-1)`);
      }
      if (extension !== undefined && EXTENSIONS_WITH_A_VALUE.has(extension)) [level, holds] = [true, 1];
    }
    at += skip;
    if (level && open.length >= maxNestingDepth) throw tooDeep(maxNestingDepth);
    if (holds > 0) {
      open.push(holds);
      continue;
    }
    // A whole value: it counts against its container, which may end with it, and so on outwards.
    while (open.length > 0) {
      const top = open.length - 1;
      if (--open[top]! > 0) break;
      open.pop();
    }
  }
}

/** Bytes after the first that say how long a value is, or which extension it is. */
function headerBytes(byte: number): number {
  switch (byte) {
    case 0xc4: case 0xd9: return 1;
    case 0xc5: case 0xda: case 0xdc: case 0xde: return 2;
    case 0xc6: case 0xdb: case 0xdd: case 0xdf: return 4;
    case 0xc7: return 2;
    case 0xc8: return 3;
    case 0xc9: return 5;
    case 0xd4: case 0xd5: case 0xd6: case 0xd7: case 0xd8: return 1;
    default: return 0;
  }
}
