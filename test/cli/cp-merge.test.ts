import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import { cpSource } from '../support/cp-container.js';
import { treeListing } from '../support/tree-listing.js';

/**
 * callwire cp merging a directory into one that exists (docs/security.md "Copies",
 * merges), out of a real container through a real server: a merge the rules refuse
 * anywhere leaves the destination as it was, byte for byte (issue 46 item 4: 7c6a127
 * moved files in, over the user's, until it met the conflict: in directory order, so the
 * archive has 200 files beside it, and one of them all but surely comes first); and a symlink of the user's
 * inside the destination is never followed into (an archive's x/sub/pwned never lands
 * in what x/sub points to).
 */

const CONTAINER = `cpc-merge-${process.pid}`;
const TREE = [
  'mkdir -p /m/b /x/sub',
  'i=100; while [ $i -lt 300 ]; do echo "new a$i" > /m/a$i; i=$((i + 1)); done',
  'echo inner > /m/b/inner',
  'echo pwned > /x/sub/pwned',
].join(' && ');

describe('callwire cp merging into an existing directory', () => {
  let source: Awaited<ReturnType<typeof cpSource>> | undefined;
  const root = mkdtempSync(join(tmpdir(), 'cpc-merge-'));

  beforeAll(async () => {
    source = await cpSource(CONTAINER, TREE);
  }, 60_000);
  afterAll(async () => {
    await source?.stop();
    rmSync(root, { recursive: true, force: true });
  });

  const callwireCp = async (from: string, to: string): Promise<{ code: number | null; stderr: string }> => {
    const run = runCli(['--url', source!.url, 'cp', from, to], { stdin: 'ignore' });
    const { code } = await run.exited;
    return { code, stderr: run.stderr };
  };

  it('a100…a299 and a directory b into a destination where b is a file: exit 125, the destination byte for byte as it was', async () => {
    const dst = join(root, 'conflict');
    mkdirSync(dst);
    writeFileSync(join(dst, 'b'), "the user's b\n");
    for (const name of ['a100', 'a150', 'a200', 'a250']) writeFileSync(join(dst, name), `the user's ${name}, which the copy would replace\n`);
    writeFileSync(join(dst, 'keep'), 'kept\n');
    const before = treeListing(dst, { links: true });
    const result = await callwireCp(`${CONTAINER}:/m/.`, `${dst}/`);
    expect(result.stderr).toMatch(/^Error: cannot overwrite non-directory ".*\/conflict\/b" with a directory$/m);
    expect(result.code).toBe(125);
    expect(treeListing(dst, { links: true })).toEqual(before);
  });

  it('the same copy where nothing conflicts merges: a150 replaced, b merged, the user\'s own files kept', async () => {
    const dst = join(root, 'merged');
    mkdirSync(join(dst, 'b'), { recursive: true });
    writeFileSync(join(dst, 'b', 'mine'), 'mine\n');
    writeFileSync(join(dst, 'a150'), "the user's a150\n");
    const result = await callwireCp(`${CONTAINER}:/m/.`, `${dst}/`);
    expect(result.code, result.stderr).toBe(0);
    expect(readFileSync(join(dst, 'a150'), 'utf8')).toBe('new a150\n');
    expect(readFileSync(join(dst, 'b', 'inner'), 'utf8')).toBe('inner\n');
    expect(readFileSync(join(dst, 'b', 'mine'), 'utf8')).toBe('mine\n');
    const names = Array.from({ length: 200 }, (_, i) => `/a${100 + i}`);
    expect(treeListing(dst).map((line) => line.split(' ')[0])).toEqual([...names, '/b', '/b/inner', '/b/mine']);
  });

  it("a symlink of the user's at dest/x/sub, and x/sub/pwned in the archive: refused (exit 125), nothing written where the link points", async () => {
    const dir = join(root, 'link');
    const outside = join(dir, 'outside');
    const dst = join(dir, 'dest');
    mkdirSync(outside, { recursive: true });
    writeFileSync(join(outside, 'victim'), 'the original\n');
    mkdirSync(join(dst, 'x'), { recursive: true });
    symlinkSync(outside, join(dst, 'x', 'sub'));
    const before = treeListing(dir, { links: true });
    const result = await callwireCp(`${CONTAINER}:/x`, `${dst}/`);
    expect(result.stderr).toMatch(/^Error: cannot overwrite non-directory ".*\/dest\/x\/sub" with a directory$/m);
    expect(result.code).toBe(125);
    expect(treeListing(dir, { links: true })).toEqual(before);
  });
});
