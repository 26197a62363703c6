import { createHash } from 'node:crypto';
import { lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { archiveGetContract, archiveStatContract, containerPath, pathStat } from '../../src/contracts/index.js';
import { defineOperation } from '../../src/dispatcher/index.js';
import { startServer, type RunningServer } from '../../src/server/index.js';
import { craftedTar, type CraftedEntry } from '../support/crafted-tar.js';
import { treeListing } from '../support/tree-listing.js';
import { runCli } from '../support/cli.js';

/**
 * callwire cp against a hostile sender (docs/security.md "callwire cp"): a server whose
 * `docker/container/archive/get` serves crafted archives, as a compromised agent or a
 * fake engine would, each with a correct terminal frame so only the client's own checks
 * stand between it and the disk. The real CLI extracts; each attack must be refused with
 * a clear error, exit 125, and the whole temporary tree (the destination's directory and
 * an `outside` directory beside it) listed the same before and after.
 */

const MODE_DIR = 2 ** 31;

describe('callwire cp refuses hostile archives', () => {
  const root = mkdtempSync(join(tmpdir(), 'cpc-hostile-'));
  const outside = join(root, 'outside');
  const work = join(root, 'work');
  /** The archive served for each "container" (the container id names the attack). */
  const archives = new Map<string, { tar: Buffer; dir: boolean; terminal?: { bytes: number; sha256: string } }>();
  let server: RunningServer;

  beforeAll(async () => {
    mkdirSync(outside);
    mkdirSync(work);
    writeFileSync(join(outside, 'victim'), 'the original\n');
    const served = (containerId: string) => {
      const found = archives.get(containerId);
      if (!found) throw new Error(`no archive for ${containerId}`);
      return found;
    };
    const stat = (dir: boolean) => ({ name: 'x', size: 0, mode: dir ? MODE_DIR + 0o755 : 0o644, mtime: '2026-01-01T00:00:00Z', linkTarget: '' });
    server = await startServer({
      port: 0,
      webTransportPort: 0,
      docker: false,
      http3: false,
      operations: [
        defineOperation({
          name: archiveStatContract.name,
          kind: 'query',
          input: z.object({ containerId: z.string(), path: containerPath }),
          output: pathStat,
          handler: ({ containerId }) => stat(served(containerId).dir),
        }),
        defineOperation({
          name: archiveGetContract.name,
          kind: 'subscription',
          input: z.object({ containerId: z.string(), path: containerPath }),
          output: archiveGetContract.output,
          handler: ({ containerId }) =>
            (async function* () {
              const { tar, dir, terminal } = served(containerId);
              yield { stat: stat(dir) };
              for (let at = 0; at < tar.byteLength; at += 64 * 1024) yield { data: tar.subarray(at, at + 64 * 1024) };
              yield { terminal: true as const, ...(terminal ?? { bytes: tar.byteLength, sha256: createHash('sha256').update(tar).digest('hex') }) };
            })(),
        }),
      ],
    });
  });

  afterAll(async () => {
    await server?.close();
    rmSync(root, { recursive: true, force: true });
  });

  /** Serves `entries` as container `name`'s /x, copies it to work/x, and returns the run with the tree before and after. */
  async function attack(name: string, entries: CraftedEntry[], extra: string[] = [], served?: { terminal?: { bytes: number; sha256: string } }) {
    archives.set(name, { tar: craftedTar(entries), dir: entries[0]?.type === 'Directory', ...served });
    const before = treeListing(root, { links: true });
    const run = runCli(['--url', server.wsUrl, 'cp', ...extra, `${name}:/x`, join(work, 'x')], { stdin: 'ignore' });
    const { code } = await run.exited;
    const after = treeListing(root, { links: true });
    return { code, stderr: run.stderr, before, after };
  }

  const expectRefused = (result: { code: number | null; stderr: string; before: string[]; after: string[] }, reason: RegExp): void => {
    expect(result.stderr).toMatch(/^Error: refused the archive/m);
    expect(result.stderr).toMatch(reason);
    expect(result.code).toBe(125);
    // Nothing written anywhere: not outside, not at the destination, no staging directory left.
    expect(result.after).toEqual(result.before);
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

  it('a device node and a FIFO', async () => {
    expectRefused(await attack('device', [{ path: 'x/', type: 'Directory' }, { path: 'x/null', type: 'CharacterDevice' }]), /its type, CharacterDevice/);
    expectRefused(await attack('fifo', [{ path: 'x/', type: 'Directory' }, { path: 'x/fifo', type: 'FIFO' }]), /its type, FIFO/);
  });

  it('a tar bomb: sizes past --max-bytes, claimed or sent', async () => {
    const claimed = await attack('bomb-claimed', [{ path: 'x', type: 'File', size: 8 * 1024 ** 3 }], ['--max-bytes', '1MiB']);
    expectRefused(claimed, /more than --max-bytes \(1048576 bytes\)/);
    // Empty files: their sizes add up to nothing, their headers to 2.5 MiB of stream.
    const headers: CraftedEntry[] = Array.from({ length: 5000 }, (_, i) => ({ path: `x/f${i}`, type: 'File' }));
    const sent = await attack('bomb-sent', [{ path: 'x/', type: 'Directory' }, ...headers], ['--max-bytes', '2MiB']);
    expectRefused(sent, /larger than --max-bytes \(2097152 bytes\)/);
  });

  it('shows a name with control characters escaped', async () => {
    const result = await attack('control', [{ path: 'x/', type: 'Directory' }, { path: 'x/\x1b[31mred\x07', type: 'FIFO' }]);
    expectRefused(result, /entry "x\/\\x1b\[31mred\\x07"/);
    // No raw BEL or ESC reaches the terminal.
    expect(result.stderr.includes('\x07') || result.stderr.includes('\x1b')).toBe(false);
  });

  it('a copy that does not match its terminal frame leaves nothing at the destination (exit 123)', async () => {
    const entries: CraftedEntry[] = [{ path: 'x', type: 'File', body: 'honest bytes' }];
    const result = await attack('mismatch', entries, [], { terminal: { bytes: craftedTar(entries).byteLength, sha256: '0'.repeat(64) } });
    expect(result.stderr).toMatch(/does not match its terminal frame/);
    expect(result.code).toBe(123);
    expect(result.after).toEqual(result.before);
  });

  it('an honest archive from the same server is extracted (the refusals above are the checks, not a broken copy)', async () => {
    archives.set('honest', { tar: craftedTar([{ path: 'x/', type: 'Directory' }, { path: 'x/f', type: 'File', body: 'hello' }, { path: 'x/l', type: 'SymbolicLink', linkpath: outside }, { path: 'x/h', type: 'Link', linkpath: 'x/f' }]), dir: true });
    const run = runCli(['--url', server.wsUrl, 'cp', 'honest:/x', join(work, 'honest')], { stdin: 'ignore' });
    expect((await run.exited).code, run.stderr).toBe(0);
    expect(readFileSync(join(work, 'honest', 'f'), 'utf8')).toBe('hello');
    expect(readlinkSync(join(work, 'honest', 'l'))).toBe(outside);
    expect(lstatSync(join(work, 'honest', 'h')).ino).toBe(lstatSync(join(work, 'honest', 'f')).ino);
    expect(readdirSync(work)).toEqual(['honest']);
    rmSync(join(work, 'honest'), { recursive: true });
  });
});
