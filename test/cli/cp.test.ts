import { chownSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import { dockerCli } from '../support/docker.js';
import { cpSource } from '../support/cp-container.js';
import { treeListing } from '../support/tree-listing.js';

/**
 * `callwire cp` beside the real `docker cp`, through a real `callwire serve` and the real
 * engine: each case of docker cp's table (a file, a directory, `dir/.`, a trailing `/`,
 * what exists at the destination), a symlink with and without -L, and -a's owners, run
 * both ways; the resulting trees (names, types, modes, owners, contents, link targets)
 * must be the same, and where docker cp refuses, callwire cp refuses too (exit 125).
 */

const CONTAINER = `cpc-side-${process.pid}`;
/** The source tree in the container: files with their own modes and owners, nested directories, relative and absolute symlinks. */
const SOURCE_TREE = [
  'mkdir -p /src/dir/sub /in-callwire /in-docker',
  "printf 'hello\\n' > /src/file",
  "printf 'a\\nb' > /src/dir/a && chmod 640 /src/dir/a && chown 1234:2345 /src/dir/a",
  "printf 'deep\\n' > /src/dir/sub/b && chmod 750 /src/dir/sub",
  'ln -s file /src/link && ln -s /etc/hostname /src/abslink && ln -s dir /src/dirlink',
].join(' && ');

describe('callwire cp beside docker cp', () => {
  let source: Awaited<ReturnType<typeof cpSource>> | undefined;
  let url = '';
  const root = mkdtempSync(join(tmpdir(), 'cpc-side-'));
  let n = 0;

  beforeAll(async () => {
    source = await cpSource(CONTAINER, SOURCE_TREE);
    url = source.url;
  }, 60_000);

  afterAll(async () => {
    await source?.stop();
    rmSync(root, { recursive: true, force: true });
  });

  const callwire = async (args: string[]): Promise<{ code: number | null; stderr: string }> => {
    const run = runCli(['--url', url, 'cp', '-q', ...args], { stdin: 'ignore' });
    const { code } = await run.exited;
    return { code, stderr: run.stderr };
  };

  /** Two fresh local directories set up alike by `prepare`, one for each tool. */
  const twin = (prepare: (dir: string) => void): { mine: string; docker: string } => {
    n++;
    const mine = join(root, `${n}-callwire`);
    const docker = join(root, `${n}-docker`);
    for (const dir of [mine, docker]) {
      mkdirSync(dir);
      prepare(dir);
    }
    return { mine, docker };
  };

  // docker cp's table, copying out: [source in the container, destination, what is there before].
  const outCases: [string, string, (dir: string) => void][] = [
    ['/src/file', 'new', () => undefined],
    ['/src/file', 'newdir/', () => undefined],
    ['/src/file', 'existing', (d) => writeFileSync(join(d, 'existing'), 'old content, longer than the new\n')],
    ['/src/file', 'existing-dir', (d) => mkdirSync(join(d, 'existing-dir'))],
    ['/src/file', 'existing-dir/', (d) => mkdirSync(join(d, 'existing-dir'))],
    ['/src/dir', 'new', () => undefined],
    ['/src/dir', 'new/', () => undefined],
    ['/src/dir/', 'new', () => undefined],
    ['/src/dir', 'existing', (d) => writeFileSync(join(d, 'existing'), 'x')],
    ['/src/dir', 'existing-dir', (d) => { mkdirSync(join(d, 'existing-dir')); writeFileSync(join(d, 'existing-dir', 'kept'), 'kept'); }],
    ['/src/dir/.', 'new', () => undefined],
    ['/src/dir/.', 'existing', (d) => writeFileSync(join(d, 'existing'), 'x')],
    ['/src/dir/.', 'existing-dir', (d) => { mkdirSync(join(d, 'existing-dir')); writeFileSync(join(d, 'existing-dir', 'kept'), 'kept'); }],
    ['/src/dir/.', 'existing-dir/.', (d) => mkdirSync(join(d, 'existing-dir'))],
    ['/src/link', 'new', () => undefined],
    ['/src/abslink', 'existing-dir', (d) => mkdirSync(join(d, 'existing-dir'))],
    ['/src/dirlink', 'new', () => undefined],
  ];

  for (const [src, dst, prepare] of outCases) {
    for (const follow of src.includes('link') ? [false, true] : [false]) {
      it(`out: ${CONTAINER}:${src} → ${dst}${follow ? ' (-L)' : ''}, with ${prepare.toString().includes('mkdir') ? 'a directory' : prepare.toString().includes('write') ? 'a file' : 'nothing'} there`, async () => {
        const { mine, docker } = twin(prepare);
        const flags = follow ? ['-L'] : [];
        const before = treeListing(mine);
        const ours = await callwire([...flags, `${CONTAINER}:${src}`, join(mine, dst)]);
        const theirs = await dockerCli(['cp', ...flags, `${CONTAINER}:${src}`, join(docker, dst)]);
        expect({ ok: ours.code === 0, stderr: ours.stderr }).toMatchObject({ ok: theirs.code === 0 });
        if (theirs.code !== 0) expect(ours.code, ours.stderr).toBe(125);
        else expect(treeListing(mine), 'the copy wrote something').not.toEqual(before);
        expect(treeListing(mine, { owners: true })).toEqual(treeListing(docker, { owners: true }));
      });
    }
  }

  /** The tree under `dir` in the container, as find and stat there see it. */
  const containerTree = async (dir: string): Promise<string[]> => {
    const script = `cd ${dir} && find . | sort | while read f; do stat -c '%n %F %a %u:%g %s' "$f"; if [ -L "$f" ]; then readlink "$f"; elif [ -f "$f" ]; then md5sum < "$f"; fi; done`;
    const listed = await dockerCli(['exec', CONTAINER, 'sh', '-c', script]);
    expect(listed.code, listed.stderr.toString()).toBe(0);
    return listed.stdout.toString().split('\n');
  };

  /** A local source tree, like the container's: files with modes and owners, a nested directory, symlinks. */
  const local = join(root, 'local');
  beforeAll(() => {
    mkdirSync(join(local, 'dir', 'sub'), { recursive: true });
    writeFileSync(join(local, 'file'), 'hello\n');
    writeFileSync(join(local, 'dir', 'a'), 'a\nb');
    chmodSync(join(local, 'dir', 'a'), 0o640);
    if (process.getuid?.() === 0) chownSync(join(local, 'dir', 'a'), 1234, 2345);
    writeFileSync(join(local, 'dir', 'sub', 'b'), 'deep\n');
    chmodSync(join(local, 'dir', 'sub'), 0o750);
    symlinkSync('file', join(local, 'link'));
    symlinkSync('/etc/hostname', join(local, 'abslink'));
  });

  // Copying in: [local source, destination under the container's directory, what is there before (a shell line, %s the directory)].
  const inCases: [string, string, string][] = [
    ['file', 'new', ''],
    ['file', 'newdir/', ''],
    ['file', 'existing', "printf 'old content, longer\\n' > %s/existing"],
    ['file', 'existing-dir', 'mkdir %s/existing-dir'],
    ['dir', 'new', ''],
    ['dir', 'existing', 'echo x > %s/existing'],
    ['dir', 'existing-dir', 'mkdir %s/existing-dir && echo kept > %s/existing-dir/kept'],
    ['dir/.', 'new', ''],
    ['dir/.', 'existing-dir', 'mkdir %s/existing-dir && echo kept > %s/existing-dir/kept'],
    ['link', 'new', ''],
    ['abslink', 'existing-dir', 'mkdir %s/existing-dir'],
  ];

  for (const [src, dst, prepare] of inCases) {
    for (const archive of src === 'dir' && dst === 'new' ? [false, true] : [false]) {
      for (const follow of src.includes('link') ? [false, true] : [false]) {
        it(`in: ${src} → ${CONTAINER}:${dst}${archive ? ' (-a)' : ''}${follow ? ' (-L)' : ''}${prepare ? `, after ${prepare}` : ''}`, async () => {
          n++;
          const mine = `/in-callwire/${n}`;
          const theirs = `/in-docker/${n}`;
          for (const dir of [mine, theirs]) {
            const made = await dockerCli(['exec', CONTAINER, 'sh', '-c', `mkdir ${dir}${prepare ? ` && ${prepare.replaceAll('%s', dir)}` : ''}`]);
            expect(made.code, made.stderr.toString()).toBe(0);
          }
          const flags = [...(archive ? ['-a'] : []), ...(follow ? ['-L'] : [])];
          const before = await containerTree(mine);
          const ours = await callwire([...flags, join(local, src), `${CONTAINER}:${mine}/${dst}`]);
          const docker = await dockerCli(['cp', ...flags, join(local, src), `${CONTAINER}:${theirs}/${dst}`]);
          expect({ ok: ours.code === 0, stderr: ours.stderr }).toMatchObject({ ok: docker.code === 0 });
          if (docker.code !== 0) expect(ours.code, ours.stderr).toBe(125);
          else expect(await containerTree(mine), 'the copy wrote something').not.toEqual(before);
          expect(await containerTree(mine)).toEqual(await containerTree(theirs));
        });
      }
    }
  }

  it('a missing path is its own clear error, exit 125', async () => {
    const { mine } = twin(() => undefined);
    const ours = await callwire([`${CONTAINER}:/no/such/path`, join(mine, 'x')]);
    expect(ours.stderr).toMatch(/^Error: no such file or directory.*\/no\/such\/path.*\(PATH_NOT_FOUND\)$/m);
    expect(ours.code).toBe(125);
  });

  it('- is a tar stream: out to stdout, in from stdin', async () => {
    const out = runCli(['--url', url, 'cp', `${CONTAINER}:/src/dir`, '-'], { stdin: 'ignore' });
    const chunks: Buffer[] = [];
    out.child.stdout.on('data', (c: Buffer) => chunks.push(c));
    expect((await out.exited).code, out.stderr).toBe(0);
    const docker = await dockerCli(['cp', `${CONTAINER}:/src/dir`, '-']);
    // The same tar, byte for byte: both are the engine's.
    expect(Buffer.concat(chunks).equals(docker.stdout)).toBe(true);
    const made = await dockerCli(['exec', CONTAINER, 'mkdir', '/from-stdin']);
    expect(made.code).toBe(0);
    const into = runCli(['--url', url, 'cp', '-', `${CONTAINER}:/from-stdin`], { stdin: 'pipe' });
    into.child.stdin.end(docker.stdout);
    expect((await into.exited).code, into.stderr).toBe(0);
    const compared = await dockerCli(['exec', CONTAINER, 'sh', '-c', 'diff -r /src/dir /from-stdin/dir && echo same']);
    expect(compared.stdout.toString()).toBe('same\n');
  });
});
