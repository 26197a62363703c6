/**
 * A one-entry POSIX ustar archive for the Lab's upload (docs/security.md "The Lab's
 * copies"): a 512-byte header, the file's bytes, zeros to the next 512-byte block, and
 * two zero blocks. The file's bytes are never held here: the caller streams them
 * between `header` and `trailer`, so a file of any size costs these 1.5 KiB.
 */

const BLOCK = 512;
/** The name field's width: a name that needs the prefix field has a `/`, which is refused anyway. */
const NAME_BYTES = 100;
/** The size field holds 11 octal digits. */
export const USTAR_MAX_SIZE = 8 ** 11 - 1;

/** Why a file cannot be archived, in words the page shows. */
export class UstarRefused extends Error {}

export interface UstarFile {
  /** A base name: no `/`, not `.` or `..`, no control character, at most 100 bytes of UTF-8. */
  readonly name: string;
  readonly size: number;
  /** Seconds since the epoch. */
  readonly mtime: number;
  /** Permission bits; 0644 by default, as a browser's File has none. */
  readonly mode?: number;
}

/** The name itself when it may be an entry of its own in the destination directory; else throws UstarRefused. */
export function entryName(name: string): string {
  if (name === '' || name === '.' || name === '..') throw new UstarRefused(`"${name}" is not a file name`);
  if (name.includes('/')) throw new UstarRefused(`a file name must not contain "/": ${JSON.stringify(name)}`);
  if (/\p{Cc}/u.test(name)) throw new UstarRefused(`a file name must not contain control characters: ${JSON.stringify(name)}`);
  if (new TextEncoder().encode(name).byteLength > NAME_BYTES) throw new UstarRefused(`a file name has at most ${NAME_BYTES} bytes in a tar header: ${JSON.stringify(name)}`);
  return name;
}

/** The entry's 512-byte header (typeflag '0', a regular file, owned by uid/gid 0). */
export function ustarHeader(file: UstarFile): Uint8Array<ArrayBuffer> {
  const name = entryName(file.name);
  if (!Number.isSafeInteger(file.size) || file.size < 0) throw new UstarRefused(`not a file size: ${file.size}`);
  if (file.size > USTAR_MAX_SIZE) throw new UstarRefused(`a ustar entry holds at most ${USTAR_MAX_SIZE} bytes; this file has ${file.size}`);
  const header = new Uint8Array(BLOCK);
  const put = (offset: number, text: string): void => header.set(new TextEncoder().encode(text), offset);
  // A numeric field: octal digits, zero-padded to its width less one, then NUL.
  const octal = (offset: number, width: number, value: number): void => put(offset, `${value.toString(8).padStart(width - 1, '0')}\0`);
  put(0, name);
  octal(100, 8, (file.mode ?? 0o644) & 0o7777);
  octal(108, 8, 0);
  octal(116, 8, 0);
  octal(124, 12, file.size);
  octal(136, 12, Math.max(0, Math.min(USTAR_MAX_SIZE, Math.floor(file.mtime))));
  put(156, '0');
  put(257, 'ustar\0');
  put(263, '00');
  // The checksum: the unsigned sum of the header's bytes with its own field as eight spaces,
  // written as six octal digits, NUL, space.
  put(148, ' '.repeat(8));
  const sum = header.reduce((total, byte) => total + byte, 0);
  put(148, `${sum.toString(8).padStart(6, '0')}\0 `);
  return header;
}

/** What follows the file's bytes: zeros to the block boundary, then the two zero blocks that end an archive. */
export function ustarTrailer(size: number): Uint8Array<ArrayBuffer> {
  return new Uint8Array(((BLOCK - (size % BLOCK)) % BLOCK) + 2 * BLOCK);
}
