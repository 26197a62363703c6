import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import { dockerCli } from '../support/docker.js';
import { cpSource } from '../support/cp-container.js';
import { treeListing } from '../support/tree-listing.js';

/**
 * callwire cp out of a real container whose own files are hostile (docs/security.md
 * "Copies"): what a container controls is its files' names, types and link
 * targets, and the engine's archive carries them as they are. Symlinks that point out
 * of the tree are copied as symlinks and never followed (as docker cp does); a name
 * with control characters lands as it is and is never printed raw; a device node or a
 * named pipe, which docker cp would make on the caller's disk, is refused. In every
 * A relative symlink that climbs out of the copy is refused, as docker cp refuses it. In every
 * case nothing outside the destination changes: the whole temporary tree is listed
 * before and after.
 */

const CONTAINER = `cpc-hostile-real-${process.pid}`;
const ESC_NAME = 'red\x1b[31mname\nline';
/** Made in the container: links out of the tree, a control-character name, hard links; then a device and a pipe apart. */
const HOSTILE_TREE = [
  'mkdir -p /loot/inner /dev-tree /pipe-tree /escape-tree',
  "printf 'secret\\n' > /loot/file",
  'ln -s /etc/passwd /loot/abs',
  'ln -s ../outside /loot/inner/sibling',
  'ln /loot/file /loot/hard',
  `printf 'x' > "/loot/$(printf '${ESC_NAME.replace('\x1b', '\\033').replace('\n', '\\n')}')"`,
  'mknod /dev-tree/null2 c 1 3',
  'mkfifo /pipe-tree/fifo',
  'ln -s ../../../../../../../tmp /escape-tree/up',
].join(' && ');

describe('callwire cp out of a container whose files are hostile', () => {
  const root = mkdtempSync(join(tmpdir(), 'cpc-hostile-real-'));
  const outside = join(root, 'outside');
  let source: Awaited<ReturnType<typeof cpSource>> | undefined;
  let url = '';

  beforeAll(async () => {
    mkdirSync(outside);
    writeFileSync(join(outside, 'victim'), 'the original\n');
    source = await cpSource(CONTAINER, HOSTILE_TREE);
    url = source.url;
  }, 60_000);
  afterAll(async () => {
    await source?.stop();
    rmSync(root, { recursive: true, force: true });
  });

  const callwireCp = async (from: string, to: string): Promise<{ code: number | null; stdout: string; stderr: string }> => {
    const run = runCli(['--url', url, 'cp', from, to], { stdin: 'ignore' });
    const { code } = await run.exited;
    return { code, stdout: run.stdout, stderr: run.stderr };
  };

  it('copies links out of the tree as links, never through them, and a control-character name as it is; the same tree as docker cp, nothing else touched', async () => {
    const before = treeListing(root);
    const copied = await callwireCp(`${CONTAINER}:/loot`, join(root, 'mine'));
    expect(copied.code, copied.stderr).toBe(0);
    // The terminal never gets the raw name: no ESC on either stream.
    expect(copied.stdout + copied.stderr).not.toContain('\x1b');
    const reference = await dockerCli(['cp', `${CONTAINER}:/loot`, join(root, 'docker')]);
    expect(reference.code, reference.stderr.toString()).toBe(0);
    const mine = treeListing(join(root, 'mine'), { links: true });
    expect(mine).toEqual(treeListing(join(root, 'docker'), { links: true }));
    expect(mine.join('\n')).toContain(ESC_NAME);
    // Outside the two destinations, nothing changed.
    const after = treeListing(root).filter((line) => !/^\/(mine|docker)[/ ]/.test(line));
    expect(after).toEqual(before);
  });

  it.each([
    ['a device node', '/dev-tree', 'its type, CharacterDevice'],
    ['a named pipe', '/pipe-tree', 'its type, FIFO'],
    ['a relative symlink out of the copy (docker cp refuses it too)', '/escape-tree', 'a symlink to "../../../../../../../tmp", out of the copy'],
  ])('refuses %s with the entry named, exit 125, nothing at the destination', async (_what, source, reason) => {
    const before = treeListing(root);
    const destination = join(root, 'refused');
    const copied = await callwireCp(`${CONTAINER}:${source}`, destination);
    expect(copied.code, copied.stderr).toBe(125);
    expect(copied.stderr).toContain(reason);
    expect(treeListing(root)).toEqual(before);
  });

  it('refuses a relative symlink out of the copy where docker cp does', async () => {
    const reference = await dockerCli(['cp', `${CONTAINER}:/escape-tree`, join(root, 'docker-escape')]);
    expect(reference.code).not.toBe(0);
    expect(reference.stderr.toString()).toContain('invalid symlink');
  });
});
