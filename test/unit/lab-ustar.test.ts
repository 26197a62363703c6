import { createHash } from 'node:crypto';
import { Parser, type ReadEntry } from 'tar';
import { describe, expect, it } from 'vitest';
import { entryName, USTAR_MAX_SIZE, UstarRefused, ustarHeader, ustarTrailer } from '../../src/lab/ustar.js';

const text = (bytes: Uint8Array, from: number, to: number): string => Buffer.from(bytes.subarray(from, to)).toString('latin1');

/** The archive the Lab's upload sends: header, data, trailer. */
function archive(name: string, data: Buffer, mtime = 1_700_000_000): Buffer {
  return Buffer.concat([ustarHeader({ name, size: data.byteLength, mtime }), data, ustarTrailer(data.byteLength)]);
}

/** What node-tar reads from an archive: each entry's header fields and body. */
async function read(tar: Buffer): Promise<{ path: string; type: string; size: number; mode: number; mtime: number; sha256: string }[]> {
  const entries: Promise<{ path: string; type: string; size: number; mode: number; mtime: number; sha256: string }>[] = [];
  const parser = new Parser({ strict: true });
  parser.on('entry', (entry: ReadEntry) => {
    entries.push(
      new Promise((resolve) => {
        const hash = createHash('sha256');
        entry.on('data', (chunk: Buffer) => hash.update(chunk));
        entry.on('end', () =>
          resolve({ path: entry.path, type: entry.type, size: entry.size ?? -1, mode: entry.mode ?? -1, mtime: Math.floor((entry.mtime?.getTime() ?? 0) / 1000), sha256: hash.digest('hex') }),
        );
      }),
    );
  });
  await new Promise<void>((resolve, reject) => {
    parser.on('end', resolve);
    parser.on('error', reject);
    parser.on('warn', (code: string, message: string) => reject(new Error(`${code}: ${message}`)));
    parser.end(tar);
  });
  return Promise.all(entries);
}

describe('the Lab\'s one-entry ustar archive', () => {
  it('a header with the POSIX ustar fields, and a checksum that sums the header with its own field as spaces', () => {
    const header = ustarHeader({ name: 'report.csv', size: 1000, mtime: 1_700_000_000.9 });
    expect(header.byteLength).toBe(512);
    expect(text(header, 0, 11)).toBe('report.csv\0');
    expect(text(header, 100, 108)).toBe('0000644\0');
    expect(text(header, 108, 124)).toBe('0000000\x000000000\0');
    expect(text(header, 124, 136)).toBe('00000001750\0');
    expect(text(header, 136, 148)).toBe(`${(1_700_000_000).toString(8).padStart(11, '0')}\0`);
    expect(text(header, 156, 157)).toBe('0');
    expect(text(header, 257, 265)).toBe('ustar\x0000');
    const field = text(header, 148, 156);
    expect(field).toMatch(/^[0-7]{6}\0 $/);
    const spaced = Uint8Array.from(header);
    spaced.fill(0x20, 148, 156);
    expect(parseInt(field.slice(0, 6), 8)).toBe(spaced.reduce((a, b) => a + b, 0));
  });

  it('data padded to a 512-byte block and two zero blocks: node-tar reads back the one entry, byte for byte', async () => {
    for (const size of [0, 1, 511, 512, 513, 70_000]) {
      const data = Buffer.from(Array.from({ length: size }, (_, i) => (i * 7 + size) & 0xff));
      const tar = archive('é data.bin', data);
      expect(tar.byteLength).toBe(512 + Math.ceil(size / 512) * 512 + 1024);
      expect(tar.subarray(512 + size).every((b) => b === 0)).toBe(true);
      expect(await read(tar)).toEqual([
        { path: 'é data.bin', type: 'File', size, mode: 0o644, mtime: 1_700_000_000, sha256: createHash('sha256').update(data).digest('hex') },
      ]);
    }
  });

  it('refuses a name with "/", "." or "..", a control character, more than 100 bytes, or a size past 11 octal digits', () => {
    for (const name of ['a/b', '/etc', '../x', '.', '..', '', 'tab\there', 'nl\n', 'del\u007f', 'c1\u0085', 'x'.repeat(101), 'é'.repeat(51)]) {
      expect(() => ustarHeader({ name, size: 1, mtime: 0 }), name).toThrow(UstarRefused);
    }
    expect(entryName('x'.repeat(100))).toBe('x'.repeat(100));
    expect(entryName('..hidden')).toBe('..hidden');
    expect(() => ustarHeader({ name: 'big', size: USTAR_MAX_SIZE + 1, mtime: 0 })).toThrow(/at most 8589934591 bytes/);
    expect(ustarHeader({ name: 'big', size: USTAR_MAX_SIZE, mtime: 0 }).byteLength).toBe(512);
  });
});
