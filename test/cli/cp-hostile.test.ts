import { lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CraftedArchiveServer } from '../support/crafted-archive-server.js';
import { craftedTar, type CraftedEntry } from '../support/crafted-tar.js';
import { treeListing } from '../support/tree-listing.js';
import { runCli } from '../support/cli.js';

/**
 * callwire cp against a hostile sender (docs/security.md "Copies"): a server whose
 * `docker/container/archive/get` serves crafted archives, as a compromised agent or a
 * fake engine would, each with a correct terminal frame so only the client's own checks
 * stand between it and the disk. The real CLI extracts; each attack must be refused with
 * a clear error, exit 125, and the whole temporary tree (an `outside` directory and every
 * test's own destination directory) listed the same before and after. Each test copies
 * into a directory of its own, so none depends on what another left.
 */

describe('callwire cp refuses hostile archives', () => {
  const root = mkdtempSync(join(tmpdir(), 'cpc-hostile-'));
  const outside = join(root, 'outside');
  let crafted: CraftedArchiveServer;

  beforeAll(async () => {
    mkdirSync(outside);
    writeFileSync(join(outside, 'victim'), 'the original\n');
    crafted = await CraftedArchiveServer.start();
  });

  afterAll(async () => {
    await crafted?.close();
    rmSync(root, { recursive: true, force: true });
  });

  /** Serves `entries` as container `name`'s /x, copies it to a fresh directory's x, and returns the run with the whole tree before and after. */
  async function attack(name: string, entries: CraftedEntry[], extra: string[] = [], served?: { terminal?: { bytes: number; sha256: string } }) {
    crafted.serve(name, { tar: craftedTar(entries), dir: entries[0]?.type === 'Directory', ...served });
    const work = mkdtempSync(join(root, `${name}-`));
    const before = treeListing(root, { links: true });
    const run = runCli(['--url', crafted.wsUrl, 'cp', ...extra, `${name}:/x`, join(work, 'x')], { stdin: 'ignore' });
    const { code } = await run.exited;
    const after = treeListing(root, { links: true });
    return { code, stderr: run.stderr, before, after, work };
  }

  const expectRefused = (result: { code: number | null; stderr: string; before: string[]; after: string[]; work: string }, reason: RegExp): void => {
    expect(result.stderr).toMatch(/^Error: refused the archive/m);
    expect(result.stderr).toMatch(reason);
    expect(result.code).toBe(125);
    // Nothing written anywhere: not outside, not at the destination, no staging directory left.
    expect(result.after).toEqual(result.before);
    expect(readdirSync(result.work)).toEqual([]);
    expect(readFileSync(join(outside, 'victim'), 'utf8')).toBe('the original\n');
  };

  it('an absolute name', async () => {
    expectRefused(await attack('absolute', [{ path: 'x/', type: 'Directory' }, { path: join(outside, 'pwned'), type: 'File', body: 'pwned' }]), /an absolute name/);
  });

  it('a ".." in a name', async () => {
    expectRefused(await attack('dotdot', [{ path: 'x/', type: 'Directory' }, { path: 'x/../../outside/pwned', type: 'File', body: 'pwned' }]), /a "\.\." in its name/);
  });

  it('an entry outside the path asked for', async () => {
    expectRefused(await attack('elsewhere', [{ path: 'x/', type: 'Directory' }, { path: 'other/pwned', type: 'File', body: 'pwned' }]), /not under "x"/);
  });

  it('a symlink to outside, then a file written through it', async () => {
    const result = await attack('through-link', [
      { path: 'x/', type: 'Directory' },
      { path: 'x/link', type: 'SymbolicLink', linkpath: outside },
      { path: 'x/link/pwned', type: 'File', body: 'pwned' },
    ]);
    expectRefused(result, /goes through the symlink "link"/);
  });

  it('a directory turned into a symlink mid-stream, then a file written into it', async () => {
    const result = await attack('dir-to-link', [
      { path: 'x/', type: 'Directory' },
      { path: 'x/d/', type: 'Directory' },
      { path: 'x/d', type: 'SymbolicLink', linkpath: outside },
      { path: 'x/d/pwned', type: 'File', body: 'pwned' },
    ]);
    expectRefused(result, /turn a Directory already extracted into a SymbolicLink/);
  });

  it('a symlink over a directory the archive made only as a parent: refused by name (exit 125), not a raw EEXIST', async () => {
    const result = await attack('link-over-parent', [
      { path: 'x/', type: 'Directory' },
      { path: 'x/d/f', type: 'File', body: 'inside' },
      { path: 'x/d', type: 'SymbolicLink', linkpath: outside },
    ]);
    expectRefused(result, /entry "x\/d": it would turn a Directory already extracted into a SymbolicLink/);
  });

  it('a chain of symlinks that leads out though each link alone stays in: x/a -> ., x/b -> a/a/../..; and x/d/l -> .., x/e -> d/l/..', async () => {
    const dot = await attack('chain-dot', [
      { path: 'x/', type: 'Directory' },
      { path: 'x/a', type: 'SymbolicLink', linkpath: '.' },
      { path: 'x/b', type: 'SymbolicLink', linkpath: 'a/a/../..' },
    ]);
    expectRefused(dot, /at the symlink "b" -> "a\/a\/\.\.\/\.\.": it leads out of the copy/);
    const up = await attack('chain-up', [
      { path: 'x/', type: 'Directory' },
      { path: 'x/d/', type: 'Directory' },
      { path: 'x/e', type: 'SymbolicLink', linkpath: 'd/l/..' },
      { path: 'x/d/l', type: 'SymbolicLink', linkpath: '..' },
    ]);
    expectRefused(up, /at the symlink "e" -> "d\/l\/\.\.": it leads out of the copy/);
    // A ".." after a name the copy does not have: where it leads depends on what is at the destination, so it is refused.
    const unknown = await attack('chain-unknown', [{ path: 'x/', type: 'Directory' }, { path: 'x/m', type: 'SymbolicLink', linkpath: 'missing/..' }]);
    expectRefused(unknown, /at the symlink "m" -> "missing\/\.\.": its "\.\." follows "missing", which is not a directory of the copy/);
  });

  it('a hard link to an outside file, by absolute name, by "..", and through a symlink', async () => {
    expectRefused(await attack('hardlink-abs', [{ path: 'x/', type: 'Directory' }, { path: 'x/h', type: 'Link', linkpath: join(outside, 'victim') }]), /a hard link to ".*victim", outside the archive/);
    expectRefused(await attack('hardlink-dotdot', [{ path: 'x/', type: 'Directory' }, { path: 'x/h', type: 'Link', linkpath: '../outside/victim' }]), /outside the archive/);
    const viaLink = await attack('hardlink-via-link', [
      { path: 'x/', type: 'Directory' },
      { path: 'x/l', type: 'SymbolicLink', linkpath: outside },
      { path: 'x/h', type: 'Link', linkpath: 'x/l/victim' },
    ]);
    expectRefused(viaLink, /not a file this archive wrote/);
  });

  it('a device node, a FIFO, and a type node-tar skips (a sparse file)', async () => {
    expectRefused(await attack('device', [{ path: 'x/', type: 'Directory' }, { path: 'x/null', type: 'CharacterDevice' }]), /its type, CharacterDevice/);
    expectRefused(await attack('fifo', [{ path: 'x/', type: 'Directory' }, { path: 'x/fifo', type: 'FIFO' }]), /its type, FIFO/);
    expectRefused(await attack('sparse', [{ path: 'x/', type: 'Directory' }, { path: 'x/sparse', type: 'SparseFile' }]), /entry "x\/sparse": its type, SparseFile/);
  });

  it('a tar bomb: sizes past --max-bytes, claimed or sent', async () => {
    const claimed = await attack('bomb-claimed', [{ path: 'x', type: 'File', size: 8 * 1024 ** 3 }], ['--max-bytes', '1MiB']);
    expectRefused(claimed, /more than --max-bytes \(1048576 bytes\)/);
    // Empty files: their sizes add up to nothing, their headers to 2.5 MiB of stream.
    const headers: CraftedEntry[] = Array.from({ length: 5000 }, (_, i) => ({ path: `x/f${i}`, type: 'File' }));
    const sent = await attack('bomb-sent', [{ path: 'x/', type: 'Directory' }, ...headers], ['--max-bytes', '2MiB']);
    expectRefused(sent, /larger than --max-bytes \(2097152 bytes\)/);
  });

  it('shows a name with C0 and C1 control characters escaped', async () => {
    // U+009B is CSI in one character: a terminal that takes C1 controls starts an escape sequence on it.
    const result = await attack('control', [{ path: 'x/', type: 'Directory' }, { path: 'x/\x1b[31mred\x07\u009b2J', type: 'FIFO' }]);
    expectRefused(result, /entry "x\/\\x1b\[31mred\\x07\\x9b2J"/);
    // No raw BEL, ESC or CSI reaches the terminal.
    expect(['\x07', '\x1b', '\u009b'].filter((c) => result.stderr.includes(c))).toEqual([]);
  });

  it('a copy that does not match its terminal frame leaves nothing at the destination (exit 123)', async () => {
    const entries: CraftedEntry[] = [{ path: 'x', type: 'File', body: 'honest bytes' }];
    const result = await attack('mismatch', entries, [], { terminal: { bytes: craftedTar(entries).byteLength, sha256: '0'.repeat(64) } });
    expect(result.stderr).toMatch(/does not match its terminal frame/);
    expect(result.code).toBe(123);
    expect(result.after).toEqual(result.before);
  });

  it('set-user-ID and set-group-ID bits are dropped from extracted files; the rest of the mode is kept', async () => {
    crafted.serve('set-id', {
      tar: craftedTar([
        { path: 'x/', type: 'Directory' },
        { path: 'x/suid', type: 'File', body: '#!/bin/sh\n', mode: 0o4755 },
        { path: 'x/sgid', type: 'File', body: '#!/bin/sh\n', mode: 0o2750 },
        { path: 'x/both', type: 'File', body: '#!/bin/sh\n', mode: 0o6711 },
      ]),
    });
    const work = mkdtempSync(join(root, 'set-id-'));
    const run = runCli(['--url', crafted.wsUrl, 'cp', 'set-id:/x', join(work, 'x')], { stdin: 'ignore' });
    expect((await run.exited).code, run.stderr).toBe(0);
    const mode = (name: string): string => (statSync(join(work, 'x', name)).mode & 0o7777).toString(8);
    expect({ suid: mode('suid'), sgid: mode('sgid'), both: mode('both') }).toEqual({ suid: '755', sgid: '750', both: '711' });
  });

  it('an honest archive from the same server is extracted (the refusals above are the checks, not a broken copy)', async () => {
    crafted.serve('honest', {
      tar: craftedTar([
        { path: 'x/', type: 'Directory' },
        { path: 'x/f', type: 'File', body: 'hello' },
        { path: 'x/l', type: 'SymbolicLink', linkpath: outside },
        { path: 'x/h', type: 'Link', linkpath: 'x/f' },
        { path: 'x/d/', type: 'Directory' },
        { path: 'x/d/up', type: 'SymbolicLink', linkpath: '../f' },
        { path: 'x/d/self', type: 'SymbolicLink', linkpath: '../d/./up' },
        { path: 'x/ro/', type: 'Directory', mode: 0o555 },
        { path: 'x/ro/f', type: 'File', body: 'in a read-only directory' },
      ]),
    });
    const work = mkdtempSync(join(root, 'honest-'));
    const run = runCli(['--url', crafted.wsUrl, 'cp', 'honest:/x', join(work, 'honest')], { stdin: 'ignore' });
    expect((await run.exited).code, run.stderr).toBe(0);
    expect(readFileSync(join(work, 'honest', 'f'), 'utf8')).toBe('hello');
    expect(readlinkSync(join(work, 'honest', 'l'))).toBe(outside);
    expect(lstatSync(join(work, 'honest', 'h')).ino).toBe(lstatSync(join(work, 'honest', 'f')).ino);
    expect(readFileSync(join(work, 'honest', 'd', 'self'), 'utf8')).toBe('hello');
    // A directory its owner may not write is filled first, then given its mode.
    expect(readFileSync(join(work, 'honest', 'ro', 'f'), 'utf8')).toBe('in a read-only directory');
    expect((statSync(join(work, 'honest', 'ro')).mode & 0o7777).toString(8)).toBe('555');
    expect(readdirSync(work)).toEqual(['honest']);
  });
});
